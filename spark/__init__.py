"""The donut shop's data pipeline on Apache Spark, reading and writing Kafka topics
through Spark's own Kafka source and sink (`format("kafka")`) against any
Kafka-protocol broker: Gregor or Apache Kafka. It talks to a broker's address
only, never to Gregor's code.

    python -m spark pipeline --bootstrap-servers localhost:9092   # `make pipeline`

Modules, one job each:

    connector   the connector's jars for `spark.jars`, or its --packages coordinate
    session     a local SparkSession on loopback, its logs in a file
    purchases   the seeded purchase-event generator and the events' JSON schema
    producer    sends generated purchases to topic `purchases`, keyed by country
    stats       the Structured Streaming job: per-country, per-minute purchases and
                revenue to topic `purchase-stats` and to a Parquet table
    reference   the same statistics computed in plain Python, to check the job
    replay      the batch job: read a topic between offsets or between timestamps
    topics      creating the pipeline's topics
    __main__    the command line (`python -m spark ...`)
"""
