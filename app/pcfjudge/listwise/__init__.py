"""The /judge/listwise front door below its route: ``task`` (request → judging task) and ``response``
(result → response). The judging itself is ``pcfjudge.judging``'s."""
