"""What the tests share: the raw wire client (raw.py), topic creation (topics.py),
a Gregor process to test against (gregor.py) and a TCP proxy a test can cut
and heal (tcp_proxy.py)."""
