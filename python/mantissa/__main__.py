"""`python3 -m mantissa info`: the report the `mantissa info` tool prints, from the same library
function (mantissa::info_text), so the two print the same text."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m mantissa",
        description="mantissa: bit-exact mixed-precision training operators for CPUs",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "info",
        help="CPU features, SIMD targets, the chosen target, threads (as `mantissa info`)",
        description="CPU features, SIMD targets, the chosen target, threads (as `mantissa info`)",
    )
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2

    import mantissa

    # As the tool: an ignored MANTISSA_NUM_THREADS or MANTISSA_SIMD_TARGET is refused.
    error = mantissa.info()["environment_error"]
    if error:
        print(f"mantissa: refusing to run: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(mantissa.info_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
