"""The controller side of the cluster metadata: the one place that changes it."""
