"""The A2A wire: JSON-RPC envelope, Task shapes, dialects, the Agent Card and
the methods behind the endpoint. Views stay thin: parse -> methods -> respond."""
