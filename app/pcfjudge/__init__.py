"""pcfjudge: permutation-consensus LLM judging (PCFJudge listwise, APOCJudge pairwise) over HTTP."""

__version__ = "0.1.0"
