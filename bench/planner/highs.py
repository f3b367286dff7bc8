#!/usr/bin/env python3
"""Solve a program written by `acc plan ... --emit=lp PATH` with HiGHS, a
second MILP solver, to see how far its bound and incumbent get against
acc's own (the program's objective is the recomputation only: add the
graph's baseline compute for a total).

    pip install highspy
    python3 bench/planner/highs.py PROGRAM.lp SECONDS [THREADS]
"""
import sys

try:
    import highspy
except ImportError:
    sys.exit("highs.py: highspy is not installed (pip install highspy)")

if len(sys.argv) < 3:
    sys.exit(__doc__)
h = highspy.Highs()
h.setOptionValue("time_limit", float(sys.argv[2]))
h.setOptionValue("threads", int(sys.argv[3]) if len(sys.argv) > 3 else 1)
if h.readModel(sys.argv[1]) != highspy.HighsStatus.kOk:
    sys.exit("highs.py: cannot read %s" % sys.argv[1])
h.run()
info = h.getInfo()
print("status %s, incumbent %s, bound %.6g" % (
    h.modelStatusToString(h.getModelStatus()),
    "%.6g" % info.objective_function_value if info.primal_solution_status else "none",
    info.mip_dual_bound))
