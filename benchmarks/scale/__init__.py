"""Scale: storage capacity by AWS's published rules, the capacity model from measured costs
to a shop's traffic, and a simulation of the leaderboard's partitions."""
