"""Machine-load helpers shared by the benchmark scripts (Linux /proc/stat; None elsewhere)."""

from __future__ import annotations

import os
import time


def machine_busy_s() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (Linux /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_for_quiet(max_wait: float, threshold: float = 0.25) -> float:
    """Wait (at most max_wait s) until other processes use < threshold of one CPU."""
    waited = 0.0
    while waited < max_wait:
        b0 = machine_busy_s()
        time.sleep(0.5)
        b1 = machine_busy_s()
        if b0 is None or b1 is None or b1 - b0 < threshold * 0.5:
            break
        waited += 0.5
    return waited
