"""What the tests share: the raw wire client (raw.py), topic creation (topics.py)
and a Gregor process to test against (gregor.py)."""
