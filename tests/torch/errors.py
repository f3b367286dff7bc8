#!/usr/bin/env python3
"""errors.py - `acc import` refuses what acc cannot express, clearly.

    python3 tests/torch/errors.py ACC

For each builder of tests/torch/bad_modules.py: acc import exits 1 and its
message names the ATen op (or what is refused), quotes the line of
bad_modules.py that produced it (FILE:LINE, found here by the comment on that
line) and, for an op acc lacks, lists the supported ops; it writes no model.
The first case runs through the `ACC import` driver, the others in-process
(torch loads once); the driver without its package is a clear error too.
Exit 0 when every case holds, 1 otherwise, 77 (skipped) without PyTorch.
"""
import contextlib
import io
import os
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401
except ImportError:
    print("errors.py: PyTorch is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from acc import torch_import  # noqa: E402
SRC = os.path.join(HERE, "bad_modules.py")
# builder, what the message must contain, the comment marking the line it must quote, lists the ops?
CASES = [
    ("cumsum", "unsupported ATen op aten.cumsum.default", "# unsupported: cumsum", True),
    ("sort", "unsupported ATen op aten.sort.default", "# unsupported: sort", True),
    ("reciprocal", "unsupported ATen op aten.reciprocal.default", "# unsupported: number / tensor", True),
    ("max_indices", "the indices of aten.max.dim (acc's max gives the values only", "# refused: argmax", True),
    ("fill_inf", "aten.masked_fill.Scalar with the fill value -inf: acc's DSL has no infinite", "# refused: -inf fill",
     False),
    ("padded", "the example targets hold ignore_index (-100), which aten.cross_entropy_loss.default skips",
     "# refused: ignore_index", False),
    ("query_mask", "scaled_dot_product_attention with this attn_mask (a constant tensor): acc takes a boolean mask it computes",
     "# refused: a constant mask", False),
    ("to_long", "a conversion from f32 to i32; acc converts bool and integer tensors to "
     "float32 only", "# refused: a float cast to an integer", False),
    ("not_a_loss", "forward must return the training loss, one float32 scalar; it returns a tensor of shape [4, 8]",
     None, False),
]


def line_of(marker):
    for i, line in enumerate(open(SRC), 1):
        if marker in line:
            return i
    raise SystemExit("errors.py: no line with %r in %s" % (marker, SRC))


def run_import(acc, func, tmp, first):
    """(exit status, stderr) of acc import: the first case through the acc
    driver (python3 -m acc import in a child), the others in this process,
    which has torch loaded already."""
    args = ["--module", SRC + ":" + func, "-o", tmp]
    if first:
        r = subprocess.run([acc, "import"] + args, capture_output=True, text=True)
        return r.returncode, r.stderr
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = torch_import.main(args)
    return rc, err.getvalue()


def main():
    acc = sys.argv[1]
    ok = True
    # the driver without its Python package: a clear error, exit 1
    r = subprocess.run([acc, "import", "--module", SRC + ":cumsum", "-o", "unused"], capture_output=True, text=True,
                       env=dict(os.environ, ACC_PYTHON_DIR="/nonexistent"))
    print("--- ACC_PYTHON_DIR=/nonexistent: exit %d\n%s" % (r.returncode, r.stderr), end="")
    if r.returncode != 1 or "the Python package is missing (/nonexistent/acc/torch_import.py" not in r.stderr:
        print("errors.py: expected exit 1 and the missing package named")
        ok = False
    for k, (func, want, marker, lists) in enumerate(CASES):
        with tempfile.TemporaryDirectory(prefix="acc-import-err-") as tmp:
            rc, err = run_import(acc, func, tmp, k == 0)
            wrote = os.listdir(tmp)
        print("--- %s: exit %d\n%s" % (func, rc, err), end="")
        checks = [(rc == 1, "exit status 1"), (want in err, "the message %r" % want),
                  (not wrote, "no files written (%s)" % wrote)]
        if marker:
            at = "%s:%d, in forward" % (os.path.relpath(SRC), line_of(marker))
            checks.append((at in err, "the source line %s" % at))
            checks.append((marker in err, "the quoted code"))
        checks.append((("acc maps these ATen ops:" in err and "aten.linear.default" in err) == lists,
                       "the supported ops listed" if lists else "no list of ops"))
        for good, what in checks:
            if not good:
                print("errors.py: %s: expected %s" % (func, what))
                ok = False
    print("errors.py: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
