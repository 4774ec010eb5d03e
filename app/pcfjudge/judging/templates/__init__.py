"""Frameworks' own judge prompts, recognised in chat messages (the chat door, ``POST /v1/chat/completions``).

Each template says how to recognise its prompt, where the candidates and their labels are, how to read the judge's
verdict the way the framework's own parser does, and how to write an answer back relabelled to another order
(``template_base``). ``template_registry.recognise`` tries them in order; ``chat_consensus`` turns the verdicts of
every order into one. Pure: no I/O, nothing of the service above the judging core.
"""
