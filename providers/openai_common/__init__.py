"""Wire facts the two OpenAI APIs share: the error body, its codes and the usage-count helper."""
