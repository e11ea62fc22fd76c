"""pytest plugin of the keep_sdk conformance suites (registered through pytest11)."""
