#!/usr/bin/env python3
"""memviz_check.py DIR: the pictures acc compile writes agree with its plan.

- DIR/memory_snapshot.pickle loads as PyTorch's memory-snapshot format (a
  dict with "segments" and "device_traces"); replaying its trace, every
  allocation is freed once, never overlaps a live one, and the most bytes
  live at once (persistent blocks included) equal plan.json's max_live_bytes;
- DIR/memory.svg is well-formed XML with one path per memory category, a
  budget line when the plan has a budget, x-axis ticks and one mark per
  recompute step; every trace event has a category; memory_activations.svg
  (the zoomed picture) is well-formed with its areas.
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
    marks = [r for r in svg.iter(ns + "rect") if r.get("fill") == "#c44e52" and r.get("height") == "6"]
    if len(marks) != plan["recompute_steps"] + 1:  # one per recompute step, one in the legend
        return "memory.svg marks %d recompute steps, the plan has %d" % (len(marks) - 1, plan["recompute_steps"])
    if len([t for t in svg.iter(ns + "text") if (t.text or "").isdigit()]) < 3:
        return "memory.svg has no x-axis ticks"
    cats_seen = {ev.get("category") for ev in snap["device_traces"][0]}
    if None in cats_seen or "activations" not in cats_seen or "unknown" not in cats_seen:
        return "the snapshot's events lack categories: %s" % sorted(map(str, cats_seen))
    zoom = ET.parse(d + "/memory_activations.svg").getroot()
    if not zoom.findall(ns + "path"):
        return "memory_activations.svg has no areas"
    print("ok   %s: snapshot of %d events, peak %d = max_live; memory.svg with %d areas, %d recompute marks; "
          "memory_activations.svg" % (plan["model"], len(snap["device_traces"][0]), peak, len(paths), len(marks) - 1))
    return None


if __name__ == "__main__":
    err = main(sys.argv[1])
    if err:
        print("FAIL " + err)
        sys.exit(1)
