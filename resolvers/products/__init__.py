"""Products: their ids, counters and newest comment, and the leaderboard."""
