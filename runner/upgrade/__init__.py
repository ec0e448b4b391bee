"""`python3 -m runner upgrade-check`: the case matrix against two burn releases,
every run put in a class (same, fixed, new difference, outcome changed,
performance changed, build-break)."""
