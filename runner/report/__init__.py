"""The nightly report: results of `check` (fresh or from files) rendered as one
self-contained HTML page and a Markdown summary, compared with the previous run
of the same machine kept in a history folder.

In the order the data moves (`[tool.importlinter]` in pyproject.toml checks it):

- `machines`: the machine fingerprint; results grouped into one set per machine
- `history`, `changes`, `pairs`: the history folder (one results file per run,
  sorted by time); what changed between two runs of one machine; a case's pairs
  as its verdicts claim them
- `trend`, `upgrades`, `fuzzing`, `code`: each run's key numbers across the
  history entries (the history view); upgrade-check outputs and the fuzz
  summary, read defensively; a program's PyTorch and burn code, rendered here
- `differences`: the difference cards (evidence, fix, burn versions seen on),
  ordered by harm (`runner.harm`), and the agreements
- `model`: what both renderings show (pairs, headline, verdict, exit code)
- `svg`, `html_base`, `html_cards`, `html_history`, `html_details`, `html_fuzz`,
  `html_page`, `markdown`: the two renderings
- `browser`: headless Chromium screenshots (`--screenshots`, the browser test)
- `command`: `python3 -m runner report`
"""
