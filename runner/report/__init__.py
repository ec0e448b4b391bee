"""The nightly report: results of `check` (fresh or from files) rendered as one
self-contained HTML page and a Markdown summary, compared with the previous run
of the same machine kept in a history folder.

- `machines`: the machine fingerprint; results grouped into one set per machine
- `history`: the history folder (one results file per run, sorted by time)
- `changes`: what changed between two runs of one machine
- `trend`: each run's key numbers across the history entries (the history view)
- `upgrades`: upgrade-check outputs, read defensively
- `differences`: the difference cards (evidence, fix, burn versions seen on)
- `model`: what both renderings show (pairs, verdict, exit code)
- `svg`: hand-written inline SVG plots, small multiples and sparklines
- `html_base`, `html_cards`, `html_history`, `html_details`, `html_page`,
  `markdown`: the two renderings
- `browser`: headless Chromium screenshots (`--screenshots`, the browser test)
- `command`: `python3 -m runner report`
"""
