"""lib_1m: the figures of one run of scripts/bench-1m.sh or scripts/fleet-1m.sh, from its
result document, the sink's stats lines and the kernel memory samples (lib-1m.sh's
sink_start and sampler_start)."""
import json


def sink_lines(path):
    """The sink's --stats-json lines (the parent's sums)."""
    try:
        return [json.loads(l) for l in open(path) if l.startswith("{")]
    except OSError:
        return []


def rss(line):
    """A sink stats line's anonymous resident memory: the processes' own data, without the
    binary's pages each has touched (one copy in the page cache for all of them); the whole
    resident set from a sink that does not report it."""
    return line.get("anon_rss_bytes", line["rss_bytes"])


def figures(res, sink_path, kmem_path, established=None):
    """The per-connection figures of one run: the client's from its result document res, the
    sink's from its stats lines (RSS at the peak count over the connections then; CPU from
    the first line to the first at the peak count, over the connections set up meanwhile),
    the kernel's from the samples (Slab + TCP pages at their peak, over established, the
    run's by default)."""
    c = res["connections"]
    est = c["established"] if established is None else established
    lines = sink_lines(sink_path)
    km = [l.split() for l in open(kmem_path)]
    before = dict(zip(km[0][0::2], map(float, km[0][1::2])))
    samples = [list(map(float, s[2:5])) for s in km[1:] if len(s) == 5]
    nan = float("nan")
    peak = max(lines, key=lambda l: l["connections"]) if lines else None
    first = lines[0] if lines else None
    sink_rss = (rss(peak) - rss(first)) / max(peak["connections"], 1) if peak else nan
    at_peak = next((l for l in lines if l["connections"] >= peak["connections"]), peak) if peak else None
    sink_cpu = ((at_peak["cpu_s"] - first["cpu_s"]) * 1e6
                / max(at_peak["connections_total"] - first["connections_total"], 1)) if peak else nan
    if samples:
        top = max(samples, key=lambda s: s[0] + s[1])
        kernel = (top[0] - before["slab_before"] + top[1] - before["tcpmem_before"]) / max(est, 1)
        minavail = min(s[2] for s in samples)
    else:
        kernel, minavail = nan, nan
    return dict(established=c["established"], failed=c["failed"], connect_s=c["connect_phase_s"],
                p50=c["connect_latency_us"]["p50"], p99=c["connect_latency_us"]["p99"],
                client_rss=res["client"]["rss_per_connection_bytes"], sink_rss=sink_rss,
                client_cpu=res["client"]["cpu_per_connect_us"], sink_cpu=sink_cpu, kernel=kernel,
                minavail=minavail, sink=lines[-1] if lines else {},
                peak_open=peak["connections"] if peak else 0)
