// franz: a small command-line client on franz-go (kgo, kadm, kmsg) for Gregor's
// compatibility suite. Every command prints JSON lines on stdout; errors are
// objects with "error" (the text), "code" (the Kafka error code, when there is
// one) and "message" (the broker's error message, when there is one).
//
//	franz apiversions     --brokers B
//	franz produce         --brokers B --topic T [--acks all|1|0] [--codec none|gzip|snappy|lz4|zstd]
//	                      [--no-idempotent] [--auto-create] [--count N --value-size S]  (else JSON lines on stdin:
//	                      {"key":"k","value":"v","headers":[["h","v"]],"partition":0,"timestamp":1700000000000})
//	franz consume         --brokers B --topic T [--partition P] [--from start|end|N|ts:MS] [--count N]
//	                      [--timeout 10s] [--reset start|end|none] [--isolation committed|uncommitted]
//	franz txn             --brokers B --topic T --txn-id X --plan commit:3,abort:2,... [--partitions N]
//	                      (one transaction per step; record j of step i is "i-commit-j" or "i-abort-j",
//	                      on partition j % N)
//	franz txn-copy        --brokers B --group G --topic IN --output OUT --txn-id X --count N
//	                      [--abort-every K]  (a GroupTransactSession: IN's records upper-cased to OUT
//	                      with the group's offsets, each poll of up to 20 one transaction, every K-th aborted)
//	franz group           --brokers B --group G --topic T --count N [--instance-id I] [--timeout 20s]
//	franz admin OP        --brokers B ...   (OP: create-topic delete-topic describe-topic describe-configs
//	                      alter-config add-partitions list-offsets delete-records metadata list-groups
//	                      describe-group delete-group fetch-offsets commit-offset)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var out = json.NewEncoder(os.Stdout)

func emit(v map[string]any) { _ = out.Encode(v) }

// errObj describes err: its text and, for a Kafka error, its code.
func errObj(err error, message string) map[string]any {
	m := map[string]any{"error": err.Error()}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		m["code"] = ke.Code
		m["name"] = ke.Message
	}
	if message != "" {
		m["message"] = message
	}
	return m
}

func codeOf(err error) any {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return nil
}

func errText(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "franz: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: franz apiversions|produce|consume|group|admin OP --brokers host:port ...")
	}
	cmd, args := os.Args[1], os.Args[2:]
	var op string
	if cmd == "admin" {
		if len(args) < 1 {
			fail("admin needs an operation")
		}
		op, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "consumer group")
	partition := fs.Int("partition", -1, "partition (-1: all / partitioner)")
	acks := fs.String("acks", "all", "all, 1 or 0")
	codec := fs.String("codec", "none", "none, gzip, snappy, lz4, zstd")
	noIdem := fs.Bool("no-idempotent", false, "disable the idempotent producer")
	autoCreate := fs.Bool("auto-create", false, "let the client ask for topic auto-creation")
	count := fs.Int("count", 0, "records to produce (generated) or to consume")
	valueSize := fs.Int("value-size", 10, "size of generated values")
	from := fs.String("from", "start", "start, end, an offset or ts:<millis>")
	reset := fs.String("reset", "start", "reset policy on out of range: start, end, none")
	timeout := fs.Duration("timeout", 15*time.Second, "overall timeout")
	instanceID := fs.String("instance-id", "", "static group member id")
	isolation := fs.String("isolation", "uncommitted", "committed or uncommitted (consume)")
	txnID := fs.String("txn-id", "", "transactional id (txn, txn-copy)")
	plan := fs.String("plan", "", "transactions: commit:N or abort:N, comma-separated (txn)")
	output := fs.String("output", "", "output topic (txn-copy)")
	abortEvery := fs.Int("abort-every", 0, "abort every K-th transaction (txn-copy)")
	partitions := fs.Int("partitions", 1, "partitions (create-topic) or new total (add-partitions)")
	rf := fs.Int("rf", 1, "replication factor")
	offset := fs.Int64("offset", 0, "offset")
	at := fs.String("at", "end", "start, end or ts:<millis> (list-offsets)")
	var configs, deletes multi
	fs.Var(&configs, "config", "key=value (repeatable)")
	fs.Var(&deletes, "delete", "config key to delete (alter-config; repeatable)")
	_ = fs.Parse(args)
	if *brokers == "" {
		fail("--brokers is required")
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.ClientID("franz-compat")}
	switch cmd {
	case "apiversions":
		apiVersions(ctx, opts)
	case "produce":
		produce(ctx, opts, *topic, *partition, *acks, *codec, *noIdem, *autoCreate, *count, *valueSize)
	case "consume":
		switch *isolation {
		case "committed":
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		case "uncommitted":
		default:
			fail("bad --isolation %q", *isolation)
		}
		consume(ctx, opts, *topic, *partition, *from, *reset, *count)
	case "txn":
		transactions(ctx, opts, *topic, *txnID, *plan, *partitions)
	case "txn-copy":
		transactionalCopy(ctx, opts, *group, *topic, *output, *txnID, *count, *abortEvery)
	case "group":
		groupConsume(ctx, opts, *group, *topic, *count, *instanceID)
	case "admin":
		admin(ctx, opts, op, *topic, *group, *partition, *partitions, *rf, *offset, *at, configs, deletes, *autoCreate)
	default:
		fail("unknown command %q", cmd)
	}
}

func newClient(opts []kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		emit(errObj(err, ""))
		os.Exit(1)
	}
	return cl
}

func apiVersions(ctx context.Context, opts []kgo.Opt) {
	cl := newClient(opts)
	defer cl.Close()
	// The client negotiates the ApiVersions version itself (retrying lower on
	// UNSUPPORTED_VERSION); this request goes through that negotiation.
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "franz-compat"
	req.ClientSoftwareVersion = "1.0"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		emit(errObj(err, ""))
		os.Exit(1)
	}
	emit(map[string]any{"error_code": resp.ErrorCode, "version": resp.Version, "count": len(resp.ApiKeys)})
	for _, k := range resp.ApiKeys {
		emit(map[string]any{"api_key": k.ApiKey, "min": k.MinVersion, "max": k.MaxVersion})
	}
	// A round trip that needs negotiated versions of Metadata.
	adm := kadm.NewClient(cl)
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		emit(errObj(err, ""))
		os.Exit(1)
	}
	emit(map[string]any{"brokers": len(m.Brokers), "cluster": m.Cluster})
}

type inRecord struct {
	Key       *string     `json:"key"`
	Value     *string     `json:"value"`
	Headers   [][2]string `json:"headers"`
	Partition *int32      `json:"partition"`
	Timestamp *int64      `json:"timestamp"`
}

func produce(ctx context.Context, opts []kgo.Opt, topic string, partition int, acks, codec string,
	noIdem, autoCreate bool, count, valueSize int) {
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		fail("bad --acks %q", acks)
	}
	if noIdem && (acks == "all" || acks == "-1") {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	switch codec {
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		fail("bad --codec %q", codec)
	}
	if autoCreate {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	} else {
		opts = append(opts, kgo.UnknownTopicRetries(2))
	}
	opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic),
		kgo.RecordRetries(5)) // (no RecordDeliveryTimeout: it counts from the record's timestamp)
	cl := newClient(opts)
	defer cl.Close()

	var recs []*kgo.Record
	if count > 0 {
		for i := 0; i < count; i++ {
			v := strings.Repeat("x", valueSize)
			if valueSize >= 10 {
				v = fmt.Sprintf("%08d", i) + v[8:]
			}
			p := int32(max(partition, 0))
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)})
		}
	} else {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			var in inRecord
			if err := json.Unmarshal([]byte(line), &in); err != nil {
				fail("bad input line %q: %v", line, err)
			}
			r := &kgo.Record{Topic: topic, Partition: int32(max(partition, 0))}
			if in.Partition != nil {
				r.Partition = *in.Partition
			}
			if in.Key != nil {
				r.Key = []byte(*in.Key)
			}
			if in.Value != nil {
				r.Value = []byte(*in.Value)
			}
			for _, h := range in.Headers {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
			}
			if in.Timestamp != nil {
				r.Timestamp = time.UnixMilli(*in.Timestamp)
			}
			recs = append(recs, r)
		}
	}
	results := cl.ProduceSync(ctx, recs...)
	failed := false
	for _, res := range results {
		m := map[string]any{"partition": res.Record.Partition, "offset": res.Record.Offset,
			"timestamp": res.Record.Timestamp.UnixMilli()}
		if res.Err != nil {
			failed = true
			for k, v := range errObj(res.Err, "") {
				m[k] = v
			}
		}
		emit(m)
	}
	if failed {
		os.Exit(1)
	}
}

func parseOffset(from string) kgo.Offset {
	switch {
	case from == "start":
		return kgo.NewOffset().AtStart()
	case from == "end":
		return kgo.NewOffset().AtEnd()
	case strings.HasPrefix(from, "ts:"):
		ms, err := strconv.ParseInt(from[3:], 10, 64)
		if err != nil {
			fail("bad --from %q", from)
		}
		return kgo.NewOffset().AfterMilli(ms)
	default:
		o, err := strconv.ParseInt(from, 10, 64)
		if err != nil {
			fail("bad --from %q", from)
		}
		return kgo.NewOffset().At(o)
	}
}

func recordObj(r *kgo.Record) map[string]any {
	var hs [][2]string
	for _, h := range r.Headers {
		hs = append(hs, [2]string{h.Key, string(h.Value)})
	}
	var key any
	if r.Key != nil {
		key = string(r.Key)
	}
	return map[string]any{"partition": r.Partition, "offset": r.Offset, "key": key, "value": string(r.Value),
		"headers": hs, "timestamp": r.Timestamp.UnixMilli(), "timestamp_type": r.Attrs.TimestampType(),
		"codec": r.Attrs.CompressionType()}
}

func consume(ctx context.Context, opts []kgo.Opt, topic string, partition int, from, reset string, count int) {
	start := parseOffset(from)
	if partition >= 0 {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(partition): start}}))
	} else {
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeStartOffset(start))
	}
	switch reset {
	case "start":
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	case "end":
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	case "none":
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	}
	opts = append(opts, kgo.FetchMaxWait(500*time.Millisecond))
	cl := newClient(opts)
	defer cl.Close()
	n := 0
	for count <= 0 || n < count {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		stop := false
		fetches.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			m := errObj(err, "")
			m["topic"], m["partition"] = t, p
			emit(m)
			if reset == "none" {
				stop = true
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			emit(recordObj(r))
			n++
		})
		if stop {
			break
		}
	}
	emit(map[string]any{"done": true, "count": n})
}

func groupConsume(ctx context.Context, opts []kgo.Opt, group, topic string, count int, instanceID string) {
	opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			emit(map[string]any{"assigned": a})
		}))
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	cl := newClient(opts)
	n := 0
	failed := false
	for n < count {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			emit(map[string]any{"error": "timed out", "count": n})
			failed = true
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			m := errObj(err, "")
			m["topic"], m["partition"] = t, p
			emit(m)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			emit(recordObj(r))
			n++
		})
	}
	if !failed {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cl.CommitUncommittedOffsets(cctx); err != nil {
			emit(errObj(err, ""))
			failed = true
		} else {
			emit(map[string]any{"committed": true, "count": n})
		}
		ccancel()
	}
	cl.Close() // leaves the group
	if failed {
		os.Exit(1)
	}
}

func splitKV(s string) (string, string) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		fail("expected key=value, got %q", s)
	}
	return k, v
}

func admin(ctx context.Context, opts []kgo.Opt, op, topic, group string, partition, partitions, rf int,
	offset int64, at string, configs, deletes []string, autoCreate bool) {
	cl := newClient(opts)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	exit := 0
	check := func(m map[string]any, err error, message string) {
		if err != nil {
			for k, v := range errObj(err, message) {
				m[k] = v
			}
			exit = 1
		}
		emit(m)
	}
	switch op {
	case "create-topic":
		cfg := map[string]*string{}
		for _, c := range configs {
			k, v := splitKV(c)
			cfg[k] = kadm.StringPtr(v)
		}
		resps, err := adm.CreateTopics(ctx, int32(partitions), int16(rf), cfg, topic)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, r := range resps.Sorted() {
			check(map[string]any{"topic": r.Topic, "partitions": r.NumPartitions, "rf": r.ReplicationFactor}, r.Err, r.ErrMessage)
		}
	case "delete-topic":
		resps, err := adm.DeleteTopics(ctx, topic)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, r := range resps.Sorted() {
			check(map[string]any{"topic": r.Topic}, r.Err, r.ErrMessage)
		}
	case "describe-topic":
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, td := range tds.Sorted() {
			var ps []map[string]any
			for _, p := range td.Partitions.Sorted() {
				ps = append(ps, map[string]any{"partition": p.Partition, "leader": p.Leader, "replicas": p.Replicas,
					"isr": p.ISR, "error": errText(p.Err)})
			}
			check(map[string]any{"topic": td.Topic, "partitions": ps, "internal": td.IsInternal}, td.Err, "")
		}
	case "describe-configs":
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, rc := range rcs {
			cs := map[string]any{}
			sources := map[string]any{}
			for _, c := range rc.Configs {
				if c.Value != nil {
					cs[c.Key] = *c.Value
				} else {
					cs[c.Key] = nil
				}
				sources[c.Key] = c.Source.String()
			}
			check(map[string]any{"topic": rc.Name, "configs": cs, "sources": sources}, rc.Err, rc.ErrMessage)
		}
	case "alter-config":
		var alters []kadm.AlterConfig
		for _, c := range configs {
			k, v := splitKV(c)
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
		}
		for _, d := range deletes {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: d})
		}
		resps, err := adm.AlterTopicConfigs(ctx, alters, topic)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, r := range resps {
			check(map[string]any{"topic": r.Name}, r.Err, r.ErrMessage)
		}
	case "add-partitions":
		resps, err := adm.UpdatePartitions(ctx, partitions, topic)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, r := range resps.Sorted() {
			check(map[string]any{"topic": r.Topic}, r.Err, r.ErrMessage)
		}
	case "list-offsets":
		var lo kadm.ListedOffsets
		var err error
		switch {
		case at == "start":
			lo, err = adm.ListStartOffsets(ctx, topic)
		case at == "end":
			lo, err = adm.ListEndOffsets(ctx, topic)
		case strings.HasPrefix(at, "ts:"):
			ms, perr := strconv.ParseInt(at[3:], 10, 64)
			if perr != nil {
				fail("bad --at %q", at)
			}
			lo, err = adm.ListOffsetsAfterMilli(ctx, ms, topic)
		default:
			fail("bad --at %q", at)
		}
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		var rows []kadm.ListedOffset
		lo.Each(func(o kadm.ListedOffset) { rows = append(rows, o) })
		sort.Slice(rows, func(i, j int) bool { return rows[i].Partition < rows[j].Partition })
		for _, o := range rows {
			check(map[string]any{"topic": o.Topic, "partition": o.Partition, "offset": o.Offset, "timestamp": o.Timestamp}, o.Err, "")
		}
	case "delete-records":
		os_ := make(kadm.Offsets)
		os_.Add(kadm.Offset{Topic: topic, Partition: int32(max(partition, 0)), At: offset})
		resps, err := adm.DeleteRecords(ctx, os_)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, ps := range resps {
			for _, r := range ps {
				check(map[string]any{"topic": r.Topic, "partition": r.Partition, "low_watermark": r.LowWatermark}, r.Err, "")
			}
		}
	case "metadata":
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = autoCreate
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		emit(map[string]any{"version": resp.Version, "brokers": len(resp.Brokers)})
		for _, t := range resp.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			emit(map[string]any{"topic": name, "code": t.ErrorCode, "partitions": len(t.Partitions)})
		}
	case "list-groups":
		lgs, err := adm.ListGroups(ctx)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, g := range lgs.Sorted() {
			emit(map[string]any{"group": g.Group, "state": g.State, "protocol_type": g.ProtocolType})
		}
	case "describe-group":
		dgs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		for _, g := range dgs.Sorted() {
			var members []map[string]any
			for _, m := range g.Members {
				var inst any
				if m.InstanceID != nil {
					inst = *m.InstanceID
				}
				members = append(members, map[string]any{"member_id": m.MemberID, "client_id": m.ClientID, "instance_id": inst})
			}
			check(map[string]any{"group": g.Group, "state": g.State, "protocol": g.Protocol, "members": members}, g.Err, "")
		}
	case "delete-group":
		r, err := adm.DeleteGroup(ctx, group)
		if err == nil {
			err = r.Err
		}
		check(map[string]any{"group": group}, err, "")
	case "fetch-offsets":
		resps, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		resps.Each(func(o kadm.OffsetResponse) {
			check(map[string]any{"topic": o.Topic, "partition": o.Partition, "offset": o.At}, o.Err, "")
		})
	case "commit-offset":
		os_ := make(kadm.Offsets)
		os_.Add(kadm.Offset{Topic: topic, Partition: int32(max(partition, 0)), At: offset, LeaderEpoch: -1})
		resps, err := adm.CommitOffsets(ctx, group, os_)
		if err != nil {
			check(map[string]any{}, err, "")
			break
		}
		resps.Each(func(o kadm.OffsetResponse) {
			check(map[string]any{"topic": o.Topic, "partition": o.Partition, "offset": o.At}, o.Err, "")
		})
	default:
		fail("unknown admin operation %q", op)
	}
	_ = io.Discard
	if exit != 0 {
		cl.Close()
		os.Exit(exit)
	}
}

// transactions produces one transaction per step of plan ("commit:3,abort:2")
// and ends it as the step says, printing one line per transaction.
func transactions(ctx context.Context, opts []kgo.Opt, topic, txnID, plan string, partitions int) {
	if txnID == "" || plan == "" {
		fail("txn needs --txn-id and --plan")
	}
	opts = append(opts, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cl := newClient(opts)
	defer cl.Close()
	for i, step := range strings.Split(plan, ",") {
		end, n, ok := strings.Cut(step, ":")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || (end != "commit" && end != "abort") {
			fail("bad --plan step %q", step)
		}
		line := map[string]any{"transaction": i, "end": end, "records": count}
		if err := cl.BeginTransaction(); err != nil {
			txnFailed(line, "begin", err)
		}
		var recs []*kgo.Record
		for j := 0; j < count; j++ {
			recs = append(recs, &kgo.Record{Partition: int32(j % max(partitions, 1)),
				Value: []byte(fmt.Sprintf("%d-%s-%d", i, end, j))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			txnFailed(line, "produce", err)
		}
		try := kgo.TryCommit
		if end == "abort" {
			try = kgo.TryAbort
		}
		if err := cl.EndTransaction(ctx, try); err != nil {
			txnFailed(line, "end", err)
		}
		emit(line)
	}
}

func txnFailed(line map[string]any, stage string, err error) {
	for k, v := range errObj(err, "") {
		line[k] = v
	}
	line["stage"] = stage
	emit(line)
	os.Exit(1)
}

// transactionalCopy is a consume-transform-produce application on a
// GroupTransactSession: each poll's records go upper-cased to output in one
// transaction with the group's offsets, until count records were committed.
func transactionalCopy(ctx context.Context, opts []kgo.Opt, group, input, output, txnID string,
	count, abortEvery int) {
	if group == "" || input == "" || output == "" || txnID == "" || count <= 0 {
		fail("txn-copy needs --group, --topic, --output, --txn-id and --count")
	}
	opts = append(opts, kgo.TransactionalID(txnID), kgo.ConsumerGroup(group), kgo.ConsumeTopics(input),
		kgo.DefaultProduceTopic(output), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.SessionTimeout(10*time.Second))
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		emit(errObj(err, ""))
		os.Exit(1)
	}
	defer sess.Close()
	committed, aborted, transactions := 0, 0, 0
	for committed < count {
		fetches := sess.PollRecords(ctx, 20) // small transactions, so that some are aborted
		if ctx.Err() != nil {
			emit(map[string]any{"error": "timed out", "committed": committed, "aborted": aborted})
			os.Exit(1)
		}
		fetches.EachError(func(t string, p int32, err error) {
			m := errObj(err, "")
			m["topic"], m["partition"] = t, p
			emit(m)
		})
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			recs = append(recs, &kgo.Record{Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value)))})
		})
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			emit(errObj(err, "begin"))
			os.Exit(1)
		}
		transactions++
		if err := sess.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			emit(errObj(err, "produce"))
		}
		try := kgo.TryCommit
		if abortEvery > 0 && transactions%abortEvery == 0 {
			try = kgo.TryAbort
		}
		ok, err := sess.End(ctx, try)
		if err != nil {
			emit(errObj(err, "end"))
			os.Exit(1)
		}
		if ok {
			committed += len(recs)
		} else {
			aborted += len(recs)
		}
		emit(map[string]any{"transaction": transactions, "records": len(recs), "committed": ok})
	}
	emit(map[string]any{"done": true, "committed": committed, "aborted": aborted})
}
