"""The nightly report: results of `check` (fresh or from files) rendered as one
self-contained HTML page and a Markdown summary, compared with the previous run
of the same machine kept in a history folder.

- `documents`: read and validate results files (bad input -> `BadInput`, exit 2)
- `machines`: the machine fingerprint; results grouped into one set per machine
- `history`: the history folder (one results file per run, sorted by time)
- `changes`: what changed between two runs of one machine
- `model`: what both renderings show (pairs, verdict, exit code); `formatting`
- `svg`: hand-written inline SVG line plots
- `html_page`, `markdown`: the two renderings
- `command`: `python3 -m runner report`
"""
