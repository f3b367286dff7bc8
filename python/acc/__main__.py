"""python3 -m acc COMMAND ...: the Python side of acc's command line.

Commands:
  import    a torch.nn.Module -> a .acdsl model and its parameters
            (acc/torch_import.py; `python3 -m acc import --help`)
"""
import sys


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] == "import":
        from acc import torch_import  # imports torch only for this command

        return torch_import.main(argv[1:])
    print("python3 -m acc: unknown command '%s' (commands: import)" % argv[0], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
