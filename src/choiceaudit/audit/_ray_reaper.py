"""The reaper of a local Ray cluster a fan-out started: ``python -m
choiceaudit.audit._ray_reaper DRIVER_PID``.

``ray.init()`` without a cluster starts one as children of the driver (GCS, raylet, dashboard
and runtime-env agents). A driver that exits normally shuts it down, but a driver killed with
SIGKILL leaves some of them behind: the raylet's agents outlive it, orphaned. This process,
started by the fan-out right after it started the cluster, in its own session, remembers the
driver's Ray descendants (every half second, so it sees those started later) and ends them
once the driver is gone (terminate, then kill after 5 s), then exits. Processes are named by
pid and creation time (psutil), so a pid reused meanwhile is never touched. The fan-out ends
the reaper itself when it shuts the cluster down.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

__all__ = ["main"]


def _is_ray(process: object) -> bool:
    import psutil

    assert isinstance(process, psutil.Process)
    try:
        name = process.name()
        head = " ".join(process.cmdline()[:3])
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return name.startswith("ray::") or name in ("gcs_server", "raylet") or "/ray/" in head


def _alive(process: object) -> bool:
    import psutil

    assert isinstance(process, psutil.Process)
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def main(argv: list[str]) -> int:
    import psutil

    try:
        driver = psutil.Process(int(argv[0]))
    except (IndexError, ValueError, psutil.NoSuchProcess):
        return 2
    me = os.getpid()
    known: dict[int, psutil.Process] = {}
    while _alive(driver):
        try:
            for child in driver.children(recursive=True):
                if child.pid != me and child.pid not in known and _is_ray(child):
                    known[child.pid] = child
        except psutil.NoSuchProcess:
            break
        time.sleep(0.5)
    left = [p for p in known.values() if _alive(p)]
    for process in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.terminate()
    _, alive = psutil.wait_procs(left, timeout=5)
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
