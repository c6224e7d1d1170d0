"""Authentication: SASL mechanisms, their credentials and a connection's authenticator."""
