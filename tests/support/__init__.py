"""What the tests share: servers, processes, waits, engines and browsers (the fixtures are conftest.py's)."""
