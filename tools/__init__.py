"""Installers and thin wrappers for the non-Python Kafka clients (`make clients`)."""
