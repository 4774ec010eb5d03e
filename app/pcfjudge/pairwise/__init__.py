"""The /judge/pairwise front door below its route: ``task`` (request → APOCJudge task) and ``response``
(result → response). The judging itself is ``pcfjudge.judging``'s."""
