"""`python3 -m runner.model`: write the results document's JSON Schema to
`schemas/results.schema.json` (a test checks the committed file is current)."""

import json
import sys

from ..atomic import write_text
from ..paths import SCHEMAS_DIR
from .results import json_schema

if __name__ == "__main__":
    target = SCHEMAS_DIR / "results.schema.json"
    write_text(target, json.dumps(json_schema(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {target}", file=sys.stderr)
