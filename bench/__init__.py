"""`make bench`: desktopd's screenshot latency beside `grim` on the same output, the same
request on an unchanged screen, click round trips, desktopd's memory, and the encoders
compared on one captured frame. Writes bench/results/desktopd.{json,md}.

Timings are ratios measured side by side in one run (these machines are shared and
noisy); nothing here asserts on them.
"""
