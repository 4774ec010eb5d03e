"""Rewards for RL: groups of completions judged together as one PCFJudge task (``scoring``), collected across
requests in process (``collector``) or across replicas through Redis (``rendezvous``), served by ``service``."""
