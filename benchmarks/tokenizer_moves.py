"""Which stored queries of SmolLM2 runs get other tokens under the current conversion than under
an older converted directory (the one a run's manifest names), i.e. which numbers can move.

    python benchmarks/tokenizer_moves.py RUN_DIR [RUN_DIR ...] --old CONVERTED_DIR

Each run is re-encoded exactly as its scorer encodes (``hf``: every option and neutral-prompt
sequence in place, under the run's chat template; ``lm-choice``: the prompt and key tokens), once
with the old tokenizer and once with the current one; a query counts when any id differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import transformers

from choiceaudit.scorers import HFScorer, LMChoiceScorer, load_causal_lm
from choiceaudit.store import open_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--old", type=Path, required=True, help="an older converted directory")
    parser.add_argument("--model", default="smollm2")
    args = parser.parse_args()
    lm = load_causal_lm(args.model)
    old = dataclasses.replace(lm, tokenizer=transformers.AutoTokenizer.from_pretrained(args.old))
    for path in args.runs:
        run = open_run(path)
        scorer = json.loads((path / "manifest.json").read_text())["scorer"]
        chat = scorer.get("chat_template")
        template = None if chat is None else chat["template"]
        moved: list[str] = []
        for row in run.rows:
            q = row.query
            if scorer["backend"] == "hf":
                a, b = (HFScorer(x, chat_template=template)._encode(q) for x in (lm, old))
                same = [e.ids for e in a[0] + a[1]] == [e.ids for e in b[0] + b[1]]
            else:
                sa, sb = LMChoiceScorer(lm), LMChoiceScorer(old)
                same = sa._key_tokens(sa.prompt(q), q.keys, q.id) == sb._key_tokens(
                    sb.prompt(q), q.keys, q.id
                )
            if not same:
                moved.append(q.id)
        print(f"{path}: {len(run.rows)} queries, {len(moved)} with other tokens {moved[:5]}")


if __name__ == "__main__":
    main()
