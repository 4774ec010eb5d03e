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
    "name": "Moon landing: best of 40, past one prompt's 16 (rounds of windows on one scale)",
    "question": "When did the first crewed Moon landing take place?",
    "candidates": [
      [
        "c01",
        "Apollo 11 landed on the Moon in July 1957."
      ],
      [
        "c02",
        "The first crewed Moon landing was in 1958."
      ],
      [
        "c03",
        "Apollo 11 landed on the Moon in July 1959."
      ],
      [
        "c04",
        "The first crewed Moon landing was in 1960."
      ],
      [
        "c05",
        "Apollo 11 landed on the Moon in July 1962."
      ],
      [
        "c06",
        "The first crewed Moon landing was in 1963."
      ],
      [
        "c07",
        "Apollo 11 landed on the Moon in July 1964."
      ],
      [
        "c08",
        "The first crewed Moon landing was in 1965."
      ],
      [
        "c09",
        "Apollo 11 landed on the Moon in July 1966."
      ],
      [
        "c10",
        "The first crewed Moon landing was in 1967."
      ],
      [
        "c11",
        "Apollo 11 landed on the Moon in July 1968."
      ],
      [
        "c12",
        "The first crewed Moon landing was in 1970."
      ],
      [
        "c13",
        "Apollo 11 landed on the Moon in July 1971."
      ],
      [
        "c14",
        "The first crewed Moon landing was in 1972."
      ],
      [
        "c15",
        "Apollo 11 landed on the Moon in July 1973."
      ],
      [
        "c16",
        "The first crewed Moon landing was in 1975."
      ],
      [
        "c17",
        "Apollo 11 landed on the Moon in July 1976."
      ],
      [
        "c18",
        "The first crewed Moon landing was in 1981."
      ],
      [
        "c19",
        "Apollo 11 landed on the Moon in July 1986."
      ],
      [
        "c20",
        "The first crewed Moon landing was in 1990."
      ],
      [
        "c21",
        "Neil Armstrong and Buzz Aldrin landed in 1969, but on Mars."
      ],
      [
        "c22",
        "It was Yuri Gagarin, in 1961."
      ],
      [
        "c23",
        "Nobody has landed on the Moon."
      ],
      [
        "c24",
        "Apollo 13 landed on the Moon in April 1970."
      ],
      [
        "c25",
        "The Soviet Luna 9 carried the first cosmonauts to the Moon in 1966."
      ],
      [
        "c26",
        "Apollo 8 landed in December 1968."
      ],
      [
        "c27",
        "Around the late 1960s, though the exact date is disputed."
      ],
      [
        "c28",
        "In 1969 or 1970; sources differ."
      ],
      [
        "c29",
        "John Glenn landed on the Moon in 1962."
      ],
      [
        "c30",
        "Apollo 10 landed in May 1969."
      ],
      [
        "c31",
        "The landing happened in the 1970s."
      ],
      [
        "c32",
        "In July 1969, Michael Collins walked on the Moon first."
      ],
      [
        "c33",
        "Apollo 12 was the first, in November 1969."
      ],
      [
        "c34",
        "Gemini 7 landed on the Moon in 1965."
      ],
      [
        "c35",
        "It was in 1969, on the far side of the Moon."
      ],
      [
        "c36",
        "Apollo 11 landed on 20 July 1969, with Armstrong stepping out first on 21 July 1969 (UTC)."
      ],
      [
        "c37",
        "Apollo 11, in 1959."
      ],
      [
        "c38",
        "Sputnik landed on the Moon in 1957."
      ],
      [
        "c39",
        "Apollo 11 landed in July 1969 at the Moon's south pole."
      ],
      [
        "c40",
        "Apollo 11 landed on 4 July 1976."
      ]
    ],
    "k": 4,
    "oracle": "c36"
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
