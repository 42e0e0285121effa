#!/usr/bin/python3
"""kern-mine: analyse a kern-capture folder into forward passes, call sites,
pointer classes and launch geometry fitted to kern's expressions
(docs/mining.md).

    kern-mine DIR [--json] [--gap-ms MS]

Exit status: 0 analysed; 1 the capture cannot be analysed (truncated,
malformed, a missing module image, zero launches: the file and line are
named); 2 usage.
"""
import argparse
import json
import os
import sys


def _import_package():
    here = os.path.dirname(os.path.realpath(__file__))
    for p in (here, os.path.join(here, '..', 'share', 'kern', 'python')):
        if os.path.isfile(os.path.join(p, 'kern_mining', 'mine.py')):
            sys.path.insert(0, os.path.abspath(p))
            break


_import_package()
from kern_mining import capture_file, mine, report  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser(prog='kern-mine', description='Analyse a kern-capture folder.')
    parser.add_argument('dir', metavar='DIR', help='the folder kern-capture -o wrote')
    parser.add_argument('--json', action='store_true', help='print one JSON object instead of the report')
    parser.add_argument('--gap-ms', type=float, default=5.0,
                        help='in a process that copies no data between launches, a pause between launches '
                             'longer than this (and 20x the median) starts a new request window (default 5)')
    args = parser.parse_args(argv)
    if args.gap_ms <= 0:
        parser.error('--gap-ms must be positive')
    try:
        procs = capture_file.read_capture(args.dir)
        result = mine.mine(procs, args.gap_ms)
    except capture_file.CaptureError as e:
        print(f'kern-mine: error: {e}', file=sys.stderr)
        return 1
    if args.json:
        json.dump(result, sys.stdout, separators=(',', ':'))
        sys.stdout.write('\n')
    else:
        sys.stdout.write(report.render(result))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
