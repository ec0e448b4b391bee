"""`burn-torch-diff port FILE.py:CLASS`: a user's own PyTorch module checked against burn.

The module is imported and built (`load`: importing the file runs its code, as any Python import
does), its `forward` traced with torch.fx (`trace`: every operation with the user's qualified
module name and file:line, and every reason it cannot be ported), the graph written as a program
of the language with a training loop around it (`convert`), both frameworks run from the module's
own weights (`compare`: the verdicts, the first module or operation whose values or gradients
differ, the catalogue case that explains it), and the case file, the PyTorch script and the burn
crate written under `--out` (`write`). `command` is the command line.
"""
