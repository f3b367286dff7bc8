#!/usr/bin/env python3
"""memviz_check.py DIR: the pictures acc compile writes agree with its plan.

- DIR/memory_snapshot.pickle loads as PyTorch's memory-snapshot format (a
  dict with "segments" and "device_traces"); replaying its trace, every
  allocation is freed once, never overlaps a live one, and the most bytes
  live at once (persistent blocks included) equal plan.json's max_live_bytes;
- DIR/memory.svg is well-formed XML with one path per memory category and a
  budget line when the plan has a budget.
Exit 0 ok, 1 a mismatch (printed). Needs only the Python standard library.
"""
import json
import pickle
import sys
import xml.etree.ElementTree as ET


def main(d):
    plan = json.load(open(d + "/plan.json"))
    snap = pickle.load(open(d + "/memory_snapshot.pickle", "rb"))
    (seg,) = snap["segments"]
    if seg["total_size"] != plan["peak_bytes"] - plan["memory"].get("workspace", 0):
        return "segment size %d != the plan's arena" % seg["total_size"]
    persistent = sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
    live, now, peak = {}, persistent, persistent
    for ev in snap["device_traces"][0]:
        a, s = ev["addr"], ev["size"]
        if ev["action"] == "alloc":
            for b, bs in live.items():
                if a < b + bs and b < a + s:
                    return "allocation at %#x (%d bytes) overlaps a live one at %#x" % (a, s, b)
            live[a] = s
            now += s
            peak = max(peak, now)
        elif ev["action"] == "free_completed":
            if live.pop(a, None) != s:
                return "free of %#x that is not live" % a
            now -= s
    if live:
        return "%d allocations never freed" % len(live)
    if peak != plan["max_live_bytes"] - plan["memory"].get("workspace", 0):
        return "the trace's peak %d != max_live_bytes %d" % (peak, plan["max_live_bytes"])
    svg = ET.parse(d + "/memory.svg").getroot()
    ns = "{http://www.w3.org/2000/svg}"
    paths = svg.findall(ns + "path")
    cats = [k for k, v in plan["memory"].items() if v and k not in ("fragmentation", "workspace")]
    if len(paths) < len(cats):
        return "memory.svg has %d category areas, the plan %d categories" % (len(paths), len(cats))
    if plan["budget_bytes"] > 0 and not any(t.text == "budget" for t in svg.iter(ns + "text")):
        return "memory.svg has no budget line"
    print("ok   %s: snapshot of %d events, peak %d = max_live; memory.svg with %d areas"
          % (plan["model"], len(snap["device_traces"][0]), peak, len(paths)))
    return None


if __name__ == "__main__":
    err = main(sys.argv[1])
    if err:
        print("FAIL " + err)
        sys.exit(1)
