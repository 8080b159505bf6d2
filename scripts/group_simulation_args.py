"""The `zeus simulate` options the job-group scripts share: which traces, and
the arrival model of `--generate-groups`. Standard library only."""


def add_arguments(parser):
    """Adds --gpu, --traces and the arrival-model flags to `parser`."""
    parser.add_argument("--gpu", help="one GPU's traces only (default: every GPU)")
    parser.add_argument("--traces", help="trace directory (default: the bundled traces)")
    parser.add_argument("--group-submissions", type=int)
    parser.add_argument("--group-interarrival-s", type=float)
    parser.add_argument("--group-duration-s", type=float)
    parser.add_argument("--group-runtime-sigma", type=float)
    parser.add_argument("--group-run-time", choices=("scaled", "submission"))
    parser.add_argument("--check-in-s", type=float,
                        help="judge runs between per-epoch reports every S s (0: per epoch)")


def simulate_flags(args):
    """The `zeus simulate` flags for the options add_arguments() parsed."""
    flags = []
    if args.gpu:
        flags += ["--gpu", args.gpu]
    if args.traces:
        flags += ["--traces", args.traces]
    for name in ("submissions", "interarrival_s", "duration_s", "runtime_sigma", "run_time"):
        value = getattr(args, "group_" + name)
        if value is not None:
            flags += ["--group-" + name.replace("_", "-"), str(value)]
    if args.check_in_s is not None:
        flags += ["--check-in-s", str(args.check_in_s)]
    return flags
