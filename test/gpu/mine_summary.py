#!/usr/bin/env python3
"""mine_summary.py MINE_JSON LIFTED_JSON LABEL

The summary line of test/gpu/run.sh's `mine` step (docs/mining.md "On a GPU
machine") from `kern-mine --json`'s object and the manifest kern-lift wrote:

  LABEL: K kernels (S call sites, L of them library calls); ABIs: F flat, T struct/extra;
  sites: X fitted, U underdetermined, R runtime/unfitted; liftable: D of D+T2 (P%)

- kernels: distinct symbols launched; a library call (cublasLtMatmul) is a site too;
- flat vs struct ABIs: a site is "struct/extra" when a parameter is a struct by
  value or its parameters travelled in `extra`, else flat;
- fitted: every quantity of the site const or an expression of n;
  underdetermined: some quantity underdetermined (and none worse); else
  runtime/unfitted;
- liftable share: the dispatches kern-lift wrote over those plus its TODO
  sites, in the programs it chose.
Exit 0; 1 for a file that cannot be read. Standard library only.
"""
import json
import sys


def summary(mined, lifted, label):
    sites = mined['sites']
    symbols = {s['symbol'] for s in sites if not s.get('library')}
    library = sum(1 for s in sites if s.get('library'))
    struct = sum(1 for s in sites if s['structs'] or s['extra'])
    counts = {'fitted': 0, 'underdetermined': 0, 'other': 0}
    for s in sites:
        verdicts = {f['verdict'] for f in s['fits'].values()}
        if verdicts <= {'const', 'expr'}:
            counts['fitted'] += 1
        elif verdicts <= {'const', 'expr', 'underdetermined'}:
            counts['underdetermined'] += 1
        else:
            counts['other'] += 1
    written = sum(len(p['dispatches']) for p in lifted['programs'].values())
    todos = len(lifted.get('todos', []))
    share = 100.0 * written / (written + todos) if written + todos else 0.0
    return (f'{label}: {len(symbols)} kernels ({len(sites)} call sites, {library} of them library calls); '
            f'ABIs: {len(sites) - struct} flat, {struct} struct/extra; sites: {counts["fitted"]} fitted, '
            f'{counts["underdetermined"]} underdetermined, {counts["other"]} runtime/unfitted; '
            f'liftable: {written} of {written + todos} ({share:.0f}%)')


def main(argv):
    if len(argv) != 3:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    try:
        with open(argv[0]) as f:
            mined = json.load(f)
        with open(argv[1]) as f:
            lifted = json.load(f)
    except (OSError, ValueError) as e:
        print(f'mine_summary.py: {e}', file=sys.stderr)
        return 1
    print(summary(mined, lifted, argv[2]))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
