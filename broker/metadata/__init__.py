"""The cluster metadata as the broker side sees it: one immutable image, and the
changes between images published to the parts that follow them."""
