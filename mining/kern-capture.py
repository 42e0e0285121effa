#!/usr/bin/python3
"""kern-capture: run a CUDA program with kern's capture library loaded and
record every module image and kernel launch into a folder (docs/mining.md).

    kern-capture [--snapshot-weights] -o DIR -- COMMAND [ARGS...]

The capture library (libkern-capture.so) is put in LD_PRELOAD, which every
exec'd child inherits, so wrapper scripts (test/sim/with-sim-gpu) and
programs they start are captured too. DIR must be new or empty. Exit status:
COMMAND's; 2 for a usage error, an unusable DIR or a missing library.
"""
import argparse
import glob
import os
import subprocess
import sys


def find_library():
    """The capture library: beside this script (build tree), else under the
    install prefix's lib*/**/kern/."""
    here = os.path.dirname(os.path.realpath(__file__))
    candidates = [os.path.join(here, 'libkern-capture.so')]
    candidates += sorted(glob.glob(os.path.join(here, '..', 'lib*', 'kern', 'libkern-capture.so')))
    candidates += sorted(glob.glob(os.path.join(here, '..', 'lib*', '*', 'kern', 'libkern-capture.so')))
    for c in candidates:
        if os.path.isfile(c):
            return os.path.abspath(c)
    return None


def main(argv):
    parser = argparse.ArgumentParser(
        prog='kern-capture',
        description='Run COMMAND with the capture library loaded; write module images and launches.jsonl to DIR.')
    parser.add_argument('-o', '--output', required=True, metavar='DIR',
                        help='output folder (created; must be empty if it exists)')
    parser.add_argument('--snapshot-weights', action='store_true',
                        help='also store the bytes of every device allocation whose contents never change '
                             'after its first use by a launch (alloc_<id>.bin)')
    parser.add_argument('command', nargs=argparse.REMAINDER, help='-- COMMAND [ARGS...]')
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    if not command:
        parser.error('no COMMAND given (kern-capture -o DIR -- COMMAND [ARGS...])')

    library = find_library()
    if library is None:
        print('kern-capture: libkern-capture.so not found beside this script or under the install prefix '
              '(it is built only where the CUDA headers are)', file=sys.stderr)
        return 2
    out = os.path.abspath(args.output)
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        print(f'kern-capture: {args.output}: exists and is not an empty folder; '
              'choose a new one (a capture is never mixed with another)', file=sys.stderr)
        return 2
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        print(f'kern-capture: {args.output}: cannot create: {e.strerror}', file=sys.stderr)
        return 2

    env = dict(os.environ)
    preload = env.get('LD_PRELOAD', '')
    env['LD_PRELOAD'] = library + (' ' + preload if preload else '')
    env['KERN_CAPTURE_DIR'] = out
    env['KERN_CAPTURE_SNAPSHOT_WEIGHTS'] = '1' if args.snapshot_weights else '0'
    try:
        rc = subprocess.call(command, env=env)
    except OSError as e:
        print(f'kern-capture: cannot run {command[0]}: {e.strerror}', file=sys.stderr)
        return 2
    summarize(out)
    return rc if rc >= 0 else 128 - rc


def summarize(out):
    """One stderr line per process that recorded something, and a warning
    when a CUDA graph ran kernels the capture could not see."""
    logs = [os.path.join(out, 'launches.jsonl')] + sorted(glob.glob(os.path.join(out, 'pid*', 'launches.jsonl')))
    found = False
    for log in logs:
        if not os.path.isfile(log):
            continue
        found = True
        launches = graphs = modules = calls = 0
        ended = False
        with open(log, 'rb') as f:
            for raw in f:
                if raw.startswith(b'{"event":"launch"'):
                    launches += 1
                elif raw.startswith(b'{"event":"graph_launch"'):
                    graphs += 1
                elif raw.startswith(b'{"event":"library_call"'):
                    calls += 1
                elif raw.startswith(b'{"event":"module"'):
                    modules += 1
                elif raw.startswith(b'{"event":"end"'):
                    ended = True
        where = os.path.relpath(log, os.getcwd())
        print(f'kern-capture: {where}: {modules} modules, {launches} launches' +
              (f', {calls} library calls' if calls else '') +
              ('' if ended else ' (no end record: the process did not exit normally)'), file=sys.stderr)
        if graphs:
            print(f'kern-capture: warning: {graphs} CUDA graph launches: the kernels a graph runs are not '
                  'recorded (only the launches made while capturing it); run the program eager '
                  '(kern-run --eager) to record every launch', file=sys.stderr)
    if not found:
        print('kern-capture: nothing recorded: the program loaded no CUDA driver through the loader '
              '(was it a CUDA program, and is the driver found?)', file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
