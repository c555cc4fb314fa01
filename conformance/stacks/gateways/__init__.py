"""Reference gateway stacks: LiteLLM, LangChain and pydantic-ai in front of the five vendor APIs (docs/gateways.md)."""
