"""Cold, warm and no-op start times of the embedded stack, as medians over several rounds.

- cold:  a brand-new data directory (Kafka storage formatted, RabbitMQ database created);
         the Kafka jars are already cached (``dualplane stack install``).
- warm:  ``up`` after ``down`` with the data directory kept, the everyday case.
- no-op: ``up`` while everything already runs (what every test session and the demo pay).

Runs a private stack on free loopback ports, so a stack you already run is untouched.
Goal from the foundation issue: warm start under 30 s.

    .venv/bin/python benchmarks/stack_start.py --rounds 3 [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path

from dualplane.core.settings import AmqpSettings, KafkaSettings, S3Settings, Settings, StackSettings
from dualplane.stack import LocalStack

WARM_GOAL_S = 30.0


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [int(sock.getsockname()[1]) for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def private_settings(data_dir: Path) -> Settings:
    kafka, controller, amqp, management, dist, s3 = _free_ports(6)
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=f"127.0.0.1:{kafka}"),
        amqp=AmqpSettings(
            url=f"amqp://guest:guest@127.0.0.1:{amqp}/%2F",  # type: ignore[arg-type]
            management_url=f"http://127.0.0.1:{management}",
        ),
        s3=S3Settings(endpoint_url=f"http://127.0.0.1:{s3}"),
        stack=StackSettings(data_dir=data_dir, kafka_controller_port=controller, rabbitmq_dist_port=dist),
    )


def _timed(action: object) -> float:
    started = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - started


def one_round(root: Path) -> dict[str, float]:
    data_dir = root / f"stack-{time.monotonic_ns()}"
    stack = LocalStack(private_settings(data_dir))
    try:
        cold = _timed(stack.up)
        noop = _timed(stack.up)
        stack.down()
        warm = _timed(stack.up)
    finally:
        stack.down()
        shutil.rmtree(data_dir, ignore_errors=True)
    return {"cold_s": cold, "warm_s": warm, "noop_s": noop}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="dualplane-bench-") as root:
        rounds = [one_round(Path(root)) for _ in range(args.rounds)]
    medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    report = {
        "rounds": rounds,
        "median": medians,
        "warm_goal_s": WARM_GOAL_S,
        "warm_vs_goal": medians["warm_s"] / WARM_GOAL_S,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"stack start over {args.rounds} rounds (median; all rounds: {rounds})")
    for key, value in medians.items():
        print(f"  {key:<7} {value:6.2f} s")
    print(f"  warm start is {report['warm_vs_goal']:.2f}x the {WARM_GOAL_S:.0f} s goal")


if __name__ == "__main__":
    main()
