"""python -m ember.serve MODEL [--host H] [--port P] [--max-batch-size N] [--batch-timeout-ms T]

Serve an ember.export file (see docs/export.md): the graph and its weights load without the Python class that
defined the model.  Prints the address it listens on, then serves until interrupted.
"""

from __future__ import annotations

import argparse
import sys

from . import ModelServer


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.serve", description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a file written by ember.export.save")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port (printed)")
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--batch-timeout-ms", type=float, default=5.0)
    args = parser.parse_args(argv)
    from .. import export

    program = export.load(args.model)
    examples = getattr(program, "example_inputs", None)
    metadata = {"path": args.model}
    if examples:
        positional = examples[0] if isinstance(examples, tuple) and len(examples) == 2 and isinstance(
            examples[1], dict) else examples
        metadata["inputs"] = [{"shape": list(t.shape), "dtype": t.dtype.name} for t in positional
                              if hasattr(t, "shape")]
    server = ModelServer(program.module(), args.host, args.port, max_batch_size=args.max_batch_size,
                         batch_timeout_ms=args.batch_timeout_ms, metadata=metadata)
    print(f"ember.serve: serving {args.model} on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
