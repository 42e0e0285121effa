"""kern-mine's analysis of a kern-capture folder (docs/mining.md): read and
check the capture (capture_file), split it into passes (passes), align call
sites (align), classify pointers (classify), fit launch geometry and scalar
arguments to kern's expression set (fit), and report (mine, report)."""
