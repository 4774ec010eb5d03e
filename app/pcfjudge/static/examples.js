// Built-in examples for the playground. Each sets the question and candidates, and optionally other form fields.
export const EXAMPLES = [
  {
    name: "Boiling point: an invented citation against plain answers (5 candidates)",
    question: "At what temperature does water boil at sea level, in degrees Fahrenheit?",
    candidates: [
      ["a", "212 degrees Fahrenheit (100 degrees Celsius) at one standard atmosphere."],
      ["b", "It boils at 213.6 °F, a figure confirmed by the Royal Society in 1874."],
      ["c", "100 degrees."],
      ["d", "About 212 °F; it is lower at altitude because the air pressure is lower."],
      ["e", "It depends on the kettle."],
    ],
    k: 7,
  },
  {
    name: "Middlemarch (3 candidates)",
    question: "Who wrote the novel Middlemarch?",
    candidates: [
      ["a", "George Eliot (Mary Ann Evans), published 1871-72."],
      ["b", "Charlotte Bronte."],
      ["c", "George Eliot, though I am not sure of the exact year."],
    ],
    k: 6,
  },
  {
    name: "Speed of light: precise, rounded and fabricated (4 candidates)",
    question: "What is the speed of light in vacuum?",
    candidates: [
      ["a", "About 300,000 km/s."],
      ["b", "299,792,458 m/s exactly, by the definition of the metre."],
      ["c", "Roughly 186,000 miles per hour."],
      ["d", "299,792.458 km/s, first measured precisely by Einstein in 1905."],
    ],
    k: 8,
  },
  {
    name: "Gold: a pair for APOCJudge (pairwise)",
    question: "What is the chemical symbol for gold?",
    candidates: [
      ["A", "Ag."],
      ["B", "Au, from the Latin aurum."],
    ],
    pairwise: true,
  },
];
