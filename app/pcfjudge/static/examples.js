// Built-in examples for the playground. Each sets the question and candidates, and optionally other form fields.
// `oracle` is the id of the truly best candidate. When the service's default judge is simulated, the page judges the
// examples with the simulated oracle (model sim:oracle, oracle_best = `oracle`), which knows that answer and still
// misjudges as a good real judge would now and then, so the examples show the method's mechanics: in the first, the
// direct verdict (one order) picks a wrong answer and the consensus over K orders recovers the right one.
// tests/api/playground/test_playground_examples.py holds every example to that. The array is JSON, so the tests read it as data.
export const EXAMPLES = [
  {
    "name": "Boiling point: the direct verdict picks a wrong answer, the consensus recovers (4 candidates)",
    "question": "At what temperature does water boil at sea level, in degrees Fahrenheit?",
    "candidates": [
      ["a", "100 degrees."],
      ["b", "It boils at 213.6 °F, a figure confirmed by the Royal Society in 1874."],
      ["c", "It depends on the kettle."],
      ["d", "212 °F (100 °C) at one standard atmosphere."]
    ],
    "k": 7,
    "oracle": "d"
  },
  {
    "name": "Middlemarch: every order of 3 candidates (K = 3! = 6)",
    "question": "Who wrote the novel Middlemarch?",
    "candidates": [
      ["a", "George Eliot, the pen name of Mary Ann Evans."],
      ["b", "Charlotte Brontë."],
      ["c", "Jane Austen, in 1815."]
    ],
    "k": 6,
    "oracle": "a"
  },
  {
    "name": "Speed of light: precise, rounded and fabricated (4 candidates)",
    "question": "What is the speed of light in vacuum?",
    "candidates": [
      ["a", "About 300,000 km/s."],
      ["b", "299,792,458 m/s exactly, by the definition of the metre."],
      ["c", "Roughly 186,000 miles per hour."],
      ["d", "299,792.458 km/s, first measured precisely by Einstein in 1905."]
    ],
    "k": 8,
    "oracle": "b"
  },
  {
    "name": "Gold: a pair for APOCJudge (pairwise)",
    "question": "What is the chemical symbol for gold?",
    "candidates": [
      ["A", "Ag."],
      ["B", "Au, from the Latin aurum."]
    ],
    "pairwise": true,
    "oracle": "B"
  }
];
