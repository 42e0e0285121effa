#!/usr/bin/python3
"""kern-lift: write a kern-capture folder as a manifest (docs/mining.md
"kern-lift").

    kern-lift DIR -o OUT.json [--program NAME=SEQ ...] [--input NAME=ALLOC ...]
                  [--vocab V] [--gap-ms MS]

Writes OUT.json, the modules beside it (OUT.module_<id>.<kind>) and, when the
capture snapshotted every weight, OUT.safetensors; prints what it lifted,
the TODO sites and notes. Exit status: 0 written (TODOs allowed: kern-verify
reports them as warnings); 1 the capture cannot be analysed or lifted (the
reason on stderr, nothing written); 2 usage.
"""
import argparse
import json
import os
import sys
import tempfile


def _import_package():
    here = os.path.dirname(os.path.realpath(__file__))
    for p in (here, os.path.join(here, '..', 'share', 'kern', 'python')):
        if os.path.isfile(os.path.join(p, 'kern_mining', 'lift.py')):
            sys.path.insert(0, os.path.abspath(p))
            break


_import_package()
from kern_mining import capture_file, lift  # noqa: E402


def _pairs(parser, values, what, convert):
    out = {}
    for v in values or []:
        name, sep, rest = v.partition('=')
        if not sep or not name:
            parser.error(f'{what} takes NAME=VALUE, got {v!r}')
        try:
            out[name] = convert(rest)
        except ValueError:
            parser.error(f'{what} {v!r}: {rest!r} is not a non-negative integer')
        if out[name] < 0:
            parser.error(f'{what} {v!r}: negative')
    return out


def main(argv):
    parser = argparse.ArgumentParser(prog='kern-lift', description='Write a kern-capture folder as a manifest.')
    parser.add_argument('dir', metavar='DIR', help='the folder kern-capture -o wrote')
    parser.add_argument('-o', dest='out', required=True, metavar='OUT.json', help='the manifest to write')
    parser.add_argument('--program', action='append', metavar='NAME=SEQ',
                        help='a program NAME from kern-mine\'s launch sequence SEQ (repeatable; default: the '
                             'prefill and decode sequences)')
    parser.add_argument('--input', action='append', metavar='NAME=ALLOC',
                        help='give the caller-contract buffer NAME to allocation ALLOC instead of the inferred one')
    parser.add_argument('--vocab', type=int, help='the embedding\'s rows (default: inferred)')
    parser.add_argument('--gap-ms', type=float, default=5.0, help='as kern-mine\'s (default 5)')
    args = parser.parse_args(argv)
    if not args.out.endswith('.json'):
        parser.error('-o must name a .json file (the weights go beside it as .safetensors)')
    if args.gap_ms <= 0:
        parser.error('--gap-ms must be positive')
    programs = _pairs(parser, args.program, '--program', int)
    inputs = _pairs(parser, args.input, '--input', int)
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        print(f'kern-lift: error: {out_dir}: no such folder', file=sys.stderr)
        return 1
    try:
        procs = capture_file.read_capture(args.dir)
        report = lift.lift(procs, args.out, args.gap_ms, programs or None, inputs or None, args.vocab)
    except (capture_file.CaptureError, lift.LiftError) as e:
        print(f'kern-lift: error: {e}', file=sys.stderr)
        return 1
    except OSError as e:
        print(f'kern-lift: error: {e.filename}: {e.strerror}', file=sys.stderr)
        return 1
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix='.' + os.path.basename(args.out) + '.')
    with os.fdopen(fd, 'w') as f:
        json.dump(report['manifest'], f, indent=1)
        f.write('\n')
    os.replace(tmp, args.out)
    m = report['manifest']
    progs = ', '.join(f'{n} (sequence {s}, {len(m["programs"][n]["dispatches"])} dispatches)'
                      for n, s in report['programs'].items())
    print(f'kern-lift: {args.out}: {len(m["kernels"])} kernels, {len(m["buffers"])} buffers; programs {progs}')
    print(f'  caller contract: {"named (causal-LM)" if report["contract"] else "not named"}')
    print(f'  weights: {report["weights"] or "none written"}; modules: {len(report["modules"])} copied beside it')
    if report['foreign_symbols']:
        print(f'  {len(report["foreign_symbols"])} kernel symbols run from the captured modules: on the cuda device; '
              'on the cpu device only those with a cpu twin (kern\'s own kernels) run')
    for t in report['todos']:
        print(f'  TODO {t["program"]}: {t["site"]}: {t["why"]}')
    for n in report['notes']:
        print(f'  note: {n}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
