"""python -m gemmd {ping,stats,drain,resume} [--url URL] [--timeout S]:
what the daemon says, as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from . import Client, Error


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gemmd",
                                 description="Ask a gemmd daemon.")
    ap.add_argument("command", choices=["ping", "stats", "drain", "resume"])
    ap.add_argument("--url", help="daemon address (default $GEMMD_URL, "
                    "else ipc:///run/gemmd/gemmd.sock)")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds (default 10)")
    args = ap.parse_args(argv)
    try:
        with Client(args.url, timeout=args.timeout) as c:
            if args.command in ("drain", "resume"):
                getattr(c, args.command)()
                doc = {"ok": True, "draining": args.command == "drain"}
            else:
                doc = getattr(c, args.command)()
    except Error as e:
        print(f"python -m gemmd: {args.command}: {e}", file=sys.stderr)
        return 1
    json.dump(doc, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
