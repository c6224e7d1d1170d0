// franzperf: the franz-go (kgo) load generator of `make bench`. Each command
// prints one JSON object on stdout: what it did and how long it took, measured
// the way Kafka's own perf tools measure (client-side, from the first record).
//
//	franzperf produce --brokers B --topic T --records N --record-size S [--acks 1|all]
//	                  [--idempotent] [--linger 5ms] [--batch-bytes 65536] [--codec none|lz4|zstd]
//	                  [--partitions P (round-robin over P; 0: the client's default partitioner)]
//	                  [--clients K (K clients share the records, each on its own connection)]
//	franzperf consume --brokers B --topic T --records N [--group G --members M]
//	franzperf e2e     --brokers B --topic T --rate R (records/s) --record-size S --seconds D
//	                  [--warmup W] [--linger 5ms] [--batch-bytes 65536]
//
// Values are one random payload of upper-case letters, as kafka-producer-perf-test
// sends, so that compression sees the same data from every client family.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "franzperf: "+format+"\n", args...)
	os.Exit(2)
}

func emit(v map[string]any) {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fail("%v", err)
	}
}

// requestCounter counts every request written to a broker, so the harness can
// report broker CPU per million requests.
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

func payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('A' + rand.IntN(26))
	}
	return b
}

// percentiles of latencies in milliseconds; the slice is sorted in place.
func percentiles(lat []time.Duration) map[string]any {
	if len(lat) == 0 {
		return map[string]any{}
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		i := int(q * float64(len(lat)))
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return float64(lat[i]) / 1e6
	}
	return map[string]any{"p50": at(0.5), "p99": at(0.99), "p999": at(0.999), "max": at(1)}
}

func producerOpts(acks string, idempotent bool, linger time.Duration, batchBytes int, codec string) []kgo.Opt {
	var opts []kgo.Opt
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		if !idempotent {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
	case "1":
		if idempotent {
			fail("an idempotent producer needs --acks all")
		}
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		fail("bad --acks %q", acks)
	}
	switch codec {
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	default:
		fail("bad --codec %q", codec)
	}
	return append(opts, kgo.ProducerLinger(linger), kgo.ProducerBatchMaxBytes(int32(batchBytes)))
}

func newClient(base []kgo.Opt, extra ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append(slices.Clone(base), extra...)...)
	if err != nil {
		fail("%v", err)
	}
	return cl
}

func produce(ctx context.Context, base []kgo.Opt, topic string, records, size, partitions, clients int) {
	value := payload(size)
	lat := make([]time.Duration, records)
	var done, failed atomic.Int64
	var firstErr atomic.Value
	if partitions > 0 {
		base = append(base, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cls := make([]*kgo.Client, clients)
	for i := range cls {
		cls[i] = newClient(base)
		// Metadata before the clock starts, as the Java tool has it once its first send returns.
		if err := cls[i].Ping(ctx); err != nil {
			fail("%v", err)
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for c, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < records; i += clients {
				r := &kgo.Record{Topic: topic, Value: value}
				if partitions > 0 {
					r.Partition = int32(i % partitions)
				}
				sent := time.Now()
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					lat[done.Add(1)-1] = time.Since(sent)
				})
			}
			if err := cl.Flush(ctx); err != nil {
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	wg.Wait()
	// Flush returns once nothing is buffered; the last promises may still be running.
	for done.Load() < int64(records) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start).Seconds()
	for _, cl := range cls {
		cl.Close()
	}
	out := map[string]any{"records": records, "bytes": int64(records) * int64(size), "seconds": elapsed,
		"latency_ms": percentiles(lat[:done.Load()]), "errors": failed.Load()}
	if e := firstErr.Load(); e != nil {
		out["error"] = e
	}
	emitWithRequests(out)
}

var counter = &requestCounter{}

func emitWithRequests(out map[string]any) {
	out["requests"] = counter.n.Load()
	emit(out)
}

// consume reads records from the start of the topic until N distinct offsets
// were seen: by one direct consumer, or by a group of M members (goroutines,
// each its own client and connection) where a rebalance may hand a partition
// over and some records are read twice.
func consume(ctx context.Context, base []kgo.Opt, topic string, records int, group string, members int) {
	var mu sync.Mutex
	next := map[int32]int64{} // partition -> one past the highest offset read
	var total, bytes int64
	var wg sync.WaitGroup
	doneCh := make(chan struct{})
	var once sync.Once
	opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if group != "" {
		opts = append(opts, kgo.ConsumerGroup(group))
	} else {
		members = 1
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	cls := make([]*kgo.Client, members)
	for m := range cls {
		cls[m] = newClient(base, opts...)
		wg.Add(1)
		go func(cl *kgo.Client) {
			defer wg.Done()
			for cctx.Err() == nil {
				fetches := cl.PollFetches(cctx)
				fetches.EachError(func(t string, p int32, err error) {
					if cctx.Err() == nil {
						fmt.Fprintf(os.Stderr, "franzperf: fetch %s/%d: %v\n", t, p, err)
					}
				})
				var n, b int64
				high := map[int32]int64{}
				fetches.EachRecord(func(r *kgo.Record) {
					n++
					b += int64(len(r.Value))
					if r.Offset+1 > high[r.Partition] {
						high[r.Partition] = r.Offset + 1
					}
				})
				if n == 0 {
					continue
				}
				mu.Lock()
				bytes += b
				for p, o := range high {
					if o > next[p] {
						total += o - next[p]
						next[p] = o
					}
				}
				reached := total >= int64(records)
				mu.Unlock()
				if reached {
					once.Do(func() { close(doneCh) })
				}
			}
		}(cls[m])
	}
	select {
	case <-doneCh:
	case <-ctx.Done():
	}
	elapsed := time.Since(start).Seconds()
	cancel()
	wg.Wait()
	for _, cl := range cls {
		cl.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	out := map[string]any{"records": total, "bytes": bytes, "seconds": elapsed}
	if total < int64(records) {
		out["error"] = fmt.Sprintf("timed out after %d of %d records", total, records)
	}
	emitWithRequests(out)
}

// e2e produces at a steady rate with the send time in each value and reads the
// records back in the same process: the latency from produce() to the consumer.
func e2e(ctx context.Context, base []kgo.Opt, topic string, rate, size int, seconds, warmup time.Duration) {
	if size < 8 {
		fail("--record-size must be at least 8")
	}
	producer := newClient(base)
	defer producer.Close()
	consumer := newClient(base, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	if err := producer.Ping(ctx); err != nil {
		fail("%v", err)
	}
	filler := payload(size - 8)
	var lat []time.Duration
	var received atomic.Int64
	start := time.Now()
	keepFrom := start.Add(warmup).UnixNano()
	cctx, cancel := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for cctx.Err() == nil {
			fetches := consumer.PollFetches(cctx)
			now := time.Now().UnixNano()
			fetches.EachRecord(func(r *kgo.Record) {
				if len(r.Value) != size {
					return // not ours: the harness's warming records
				}
				sent := int64(binary.BigEndian.Uint64(r.Value))
				received.Add(1)
				if sent >= keepFrom {
					lat = append(lat, time.Duration(now-sent))
				}
			})
		}
	}()
	var sent int64
	end := start.Add(seconds)
	for now := time.Now(); now.Before(end); now = time.Now() {
		due := int64(now.Sub(start).Seconds() * float64(rate))
		for ; sent < due; sent++ {
			v := make([]byte, size)
			binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
			copy(v[8:], filler)
			producer.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, nil)
		}
		time.Sleep(time.Millisecond)
	}
	achieved := float64(sent) / time.Since(start).Seconds()
	_ = producer.Flush(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for received.Load() < sent && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-consumed
	out := map[string]any{"records": sent, "received": received.Load(), "achieved_rate": achieved,
		"latency_ms": percentiles(lat), "samples": len(lat)}
	if received.Load() < sent {
		out["error"] = fmt.Sprintf("received %d of %d records", received.Load(), sent)
	}
	emitWithRequests(out)
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: franzperf produce|consume|e2e --brokers host:port ...")
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	records := fs.Int("records", 0, "records to produce or to read")
	size := fs.Int("record-size", 1024, "bytes per record value")
	acks := fs.String("acks", "1", "1 or all")
	idempotent := fs.Bool("idempotent", false, "idempotent producer (needs --acks all)")
	linger := fs.Duration("linger", 5*time.Millisecond, "producer linger")
	batchBytes := fs.Int("batch-bytes", 65536, "largest batch per partition")
	codec := fs.String("codec", "none", "none, lz4, zstd, gzip, snappy")
	partitions := fs.Int("partitions", 0, "round-robin over this many partitions (0: default partitioner)")
	clients := fs.Int("clients", 1, "producer clients sharing the records")
	group := fs.String("group", "", "consumer group (consume)")
	members := fs.Int("members", 1, "group members (consume --group)")
	rate := fs.Int("rate", 1000, "records per second (e2e)")
	seconds := fs.Duration("seconds", 10*time.Second, "how long to produce (e2e)")
	warmup := fs.Duration("warmup", time.Second, "records sent in this first part are not sampled (e2e)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	_ = fs.Parse(args)
	if *brokers == "" || *topic == "" {
		fail("--brokers and --topic are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	base := []kgo.Opt{kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.ClientID("franzperf"),
		kgo.WithHooks(counter)}
	switch cmd {
	case "produce":
		produce(ctx, append(base, producerOpts(*acks, *idempotent, *linger, *batchBytes, *codec)...),
			*topic, *records, *size, *partitions, max(*clients, 1))
	case "consume":
		consume(ctx, base, *topic, *records, *group, max(*members, 1))
	case "e2e":
		e2e(ctx, append(base, producerOpts(*acks, false, *linger, *batchBytes, *codec)...),
			*topic, *rate, *size, *seconds, *warmup)
	default:
		fail("unknown command %q", cmd)
	}
}
