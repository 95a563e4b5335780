"""The worker process: Kafka source and transactional sink, snapshots to S3, control API, metrics.

`streamshift worker` (module `worker`; the loop in `loop`) reads a `WorkerConfig` from env,
restores the instance's latest snapshot, replays what its committed output already covers
without emitting it again, and then runs the consume → process → produce loop with one Kafka
transaction per commit interval.
"""
