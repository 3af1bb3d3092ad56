"""What knowledge articles say and how customers ask about it.

Each planted fact of an article (`generator/world.py` plants them) carries:
- `question`: the canonical question (what the fact is; `{issue}` stands for the issue's name),
- `answer`: the short answer, which the article states word for word,
- `says`: sentences that state the answer in prose (the offline writer takes one in turn, by the article's
  ordinal among its kind: six or more per care and product fact, so none is in more than two articles),
- `asks`: questions in a customer's or agent's words that need the article's prose to answer: none of them
  repeats the article's sentences (knowledge QA draws its questions from these).

The article bodies around the facts are composed by the offline writer from the prose banks here
(`SECTIONS`, with more in `article_prose.py`), so an article reads like CRMArena's: about 3,000 characters of
paragraphs, no Q:/A: lines. `paragraphs` gives the article at ordinal i of its kind the opening at i and the
window of `BODY_PARAGRAPHS[kind]` consecutive paragraphs of `body_pool(kind)` starting at i * that number,
so with the default org's article counts no paragraph, and no 8-word sequence, is in more than two articles
(tests/test_text_fidelity.py holds the share to 5%).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from generator.text.article_prose import BODY_MORE, OPENINGS_MORE, SUBJECT_MORE_EXTRA

# -- who asks: a customer's situation per issue, in their words -----------------------------------------

SITUATIONS: dict[str, list[str]] = {
    "incorrect_item": [
        "a buyer who got a different colour than the one on the receipt",
        "someone who was shipped the wrong model entirely",
        "a shopper who was sent the wrong thing",
        "someone whose parcel held a different model than the one they paid for",
        "a customer who opened the box and found somebody else's order",
    ],
    "size_mismatch": [
        "a buyer whose boots pinch even though they picked their usual size",
        "someone swimming in a jacket that's two sizes too big",
        "a shopper whose order came in a size that doesn't fit",
        "someone whose shoes run nothing like the chart said",
        "a customer who needs a bigger or smaller size",
    ],
    "cancel_order": [
        "a buyer who ordered twice by accident",
        "someone who wants to stop an order before it ships",
        "a shopper who wants to call off an order they just placed",
        "someone who changed their mind right after checking out",
        "a customer whose cancel button did nothing",
    ],
    "warranty_claim": [
        "a buyer whose guarantee request is stuck",
        "someone who filed a claim weeks ago and heard nothing",
        "a shopper stuck on a guarantee claim",
        "someone whose claim for a broken product got no reply",
        "a customer chasing a claim under the manufacturer's cover",
    ],
    "shipping_delay": [
        "a buyer whose order missed its promised delivery day",
        "someone whose package seems stuck at a depot",
        "a shopper whose parcel is running late",
        "someone still waiting on a delivery long past its date",
        "a customer whose tracking page hasn't moved in days",
    ],
    "loyalty_redemption": [
        "a buyer whose rewards didn't come off the bill",
        "someone whose member balance looks wrong after an order",
        "a member whose reward points vanished at checkout",
        "someone who couldn't spend their rewards balance",
        "a customer whose points never showed up after an order",
    ],
    "return_confusion": [
        "a buyer who doesn't know whether a worn item can go back",
        "someone puzzled by the returns steps",
        "a shopper unsure how to send something back",
        "someone who can't work out whether their item is returnable",
        "a customer who never got a label for their return",
    ],
    "defective_product": [
        "a buyer whose zip broke on the first day",
        "someone whose soles came unglued within weeks",
        "a shopper whose item fell apart after a few wears",
        "someone who received something faulty",
        "a customer whose gear stopped working under normal use",
    ],
    "promo_overcharge": [
        "a buyer whose sale price vanished at checkout",
        "someone who paid more than the discounted amount",
        "a shopper billed at full price during a sale",
        "someone whose coupon didn't come off the total",
        "a customer charged more than the advertised deal",
    ],
    "checkout_failure": [
        "a buyer who keeps seeing an error when paying",
        "someone whose basket empties at the last step",
        "a shopper whose card keeps getting declined on the site",
        "someone who couldn't finish paying online",
        "a customer stuck on the payment page",
    ],
    "damaged_in_transit": [
        "a buyer whose parcel arrived soaked and split",
        "someone who found the contents smashed on arrival",
        "a shopper whose box showed up crushed",
        "someone whose order was broken on the way",
        "a customer who got a torn, dented parcel",
    ],
    "missing_item": [
        "a buyer whose delivery came without one of the products",
        "someone who received an order with a piece left out",
        "a shopper whose box was short one thing",
        "someone who got only part of what they bought",
        "a customer whose package lacked an item on the receipt",
    ],
}


def situations(issue_key: str, issue_name: str) -> list[str]:
    return SITUATIONS.get(issue_key) or [f"a customer reporting {issue_name.lower()}"]


# -- issue policies: the handling facts ----------------------------------------------------------------

# issue → [(canonical question, answer, asks with {s} = a situation, says with {answer})]
HANDLING: dict[str, list[tuple[str, str, list[str], list[str]]]] = {
    "incorrect_item": [
        (
            "What should agents ask the customer for in {issue} cases?",
            "a photo of the item and the label on the box",
            ["I'm helping {s}. What proof do I request from them first?",
             "What evidence does the team need from {s} before sorting it out?"],
            ["Before anything is promised, the agent requests {answer}, which lets the warehouse see exactly what left the building.",
             "The first thing to collect is {answer}; without it the shipping team cannot trace the mix-up."],
        ),
        (
            "What do agents check to confirm which item was shipped in {issue} cases?",
            "the order's packing record",
            ["Where can I confirm what actually went out to {s}?",
             "Which record shows what we really shipped to {s}?"],
            ["To confirm what went out, the agent compares the photo with {answer}.",
             "The agent then opens {answer} to confirm which product actually left the warehouse."],
        ),
    ],
    "size_mismatch": [
        (
            "What do agents confirm first in {issue} cases?",
            "the size ordered and the size the customer normally wears",
            ["What's the first thing to pin down with {s}?",
             "Before swapping anything for {s}, what should be verified?"],
            ["The conversation starts by confirming {answer}, since most fit complaints come from a mismatch between the two.",
             "Agents begin by establishing {answer}; this tells them whether the chart or the product is at fault."],
        ),
        (
            "Where do agents point customers in {issue} cases?",
            "the sizing guide for the product's category",
            ["What resource should I share with {s}?",
             "Is there a page we send {s} to so the next pick fits?"],
            ["Customers are then pointed to {answer} so that the next choice fits.",
             "It helps to share {answer}, which lists measurements and how each range tends to fit."],
        ),
    ],
    "cancel_order": [
        (
            "What do agents check first in {issue} cases?",
            "whether the order has already left the warehouse",
            ["What's the very first thing to look up for {s}?",
             "Before promising anything to {s}, what has to be looked up?"],
            ["The first check is {answer}, because a parcel in transit can no longer be stopped.",
             "Agents look first at {answer}; everything else depends on that answer."],
        ),
        (
            "What can the customer do in {issue} cases if the order already shipped?",
            "return it instead",
            ["The parcel is already on its way — what option is left for {s}?",
             "If it's too late to stop the shipment, what should {s} do?"],
            ["When the parcel is already on its way, the customer can {answer} once it arrives, and the refund follows the usual return rules.",
             "If the shipment cannot be stopped, the customer is told they can {answer} after delivery."],
        ),
    ],
    "warranty_claim": [
        (
            "When are {issue} cases escalated to the warranty desk?",
            "when the claim is older than five business days",
            ["At what point does a claim from {s} go up to the specialist team?",
             "How old must a pending claim be before it's handed to the warranty desk?"],
            ["A claim is passed to the warranty desk {answer}, so that no customer waits indefinitely.",
             "Escalation happens {answer}; before that, the front-line agent owns the claim."],
        ),
        (
            "What do agents ask for in {issue} cases?",
            "photos of the defect and the date of purchase",
            ["What does the claims team need from {s}?",
             "Which details should I collect from {s} to move the claim along?"],
            ["To move a claim along, agents collect {answer} and attach both to the case.",
             "The agent requests {answer}; the claims team will not review a file without them."],
        ),
    ],
    "shipping_delay": [
        (
            "When do agents open a trace with the carrier in {issue} cases?",
            "when there has been no scan for three days",
            ["At what point should I ask the courier to investigate for {s}?",
             "How long without movement before we get the carrier to look into a parcel?"],
            ["A trace is opened with the carrier {answer}; earlier than that, most parcels simply catch up.",
             "Agents request a carrier trace {answer}, and note the trace number on the case."],
        ),
        (
            "How often do agents update the customer in {issue} cases?",
            "every two business days",
            ["How regularly should {s} hear back from us?",
             "What's the follow-up rhythm with {s} while the courier investigates?"],
            ["While the trace is open, the customer hears from us {answer}, even when there is no news.",
             "Agents send an update {answer} until the parcel is found or the case is resolved."],
        ),
    ],
    "loyalty_redemption": [
        (
            "What do agents review in {issue} cases?",
            "the customer's points ledger for the order",
            ["Where do I look to see what happened to the rewards of {s}?",
             "What should I pull up to understand the balance problem of {s}?"],
            ["The agent reviews {answer} to see whether the points were earned, held or spent.",
             "Most questions are settled by reading {answer}, which lists every credit and deduction."],
        ),
        (
            "What happens in {issue} cases to points deducted without a discount?",
            "they are re-credited",
            ["If the balance went down but no discount was applied for {s}, what happens to those points?",
             "Points were taken but the order got no reduction. Does {s} get them back?"],
            ["Where points were taken from the balance but no discount reached the order, {answer} to the account within the same day.",
             "Any points deducted without a matching discount: {answer}, and the agent notes the adjustment on the case."],
        ),
    ],
    "return_confusion": [
        (
            "Where do agents send the prepaid label from in {issue} cases?",
            "the returns portal",
            ["How do we get a shipping label to {s}?",
             "Which tool generates the free postage for {s}?"],
            ["The prepaid label is sent from {answer}, which also records the reason for the return.",
             "Agents issue the label through {answer} so the warehouse expects the parcel."],
        ),
        (
            "What do agents explain in {issue} cases?",
            "the return window and the condition items must be in",
            ["What should I walk {s} through?",
             "What are the key points to clarify for {s}?"],
            ["Most confusion clears once the agent explains {answer}.",
             "Agents take a moment to explain {answer}, in plain words and without jargon."],
        ),
    ],
    "defective_product": [
        (
            "Why do agents log the defect in {issue} cases?",
            "so the product team can review the batch",
            ["What is the point of recording the fault reported by {s}?",
             "Why bother writing up the flaw when helping {s}?"],
            ["Each defect is logged with its details {answer}; repeated faults lead to recalls and design changes.",
             "Agents record the fault in the defect log {answer}."],
        ),
        (
            "What do agents ask for in {issue} cases?",
            "photos of the defect and how the product was used",
            ["Which details do I gather from {s} about the failure?",
             "What information should {s} send us about the fault?"],
            ["Agents ask for {answer}, which separates genuine faults from wear and tear.",
             "The agent gathers {answer} before choosing a resolution."],
        ),
    ],
    "promo_overcharge": [
        (
            "What do agents compare in {issue} cases?",
            "the charged price with the promotional price",
            ["How do I work out how much {s} was overcharged?",
             "What figures should be set side by side for {s}?"],
            ["To size the overcharge, the agent compares {answer} on the day of the order.",
             "Agents put {answer} side by side; the difference is what the customer is owed."],
        ),
        (
            "What do agents note in the case for finance in {issue} cases?",
            "the promo code",
            ["What detail does accounting need on the case of {s}?",
             "Which piece of information should be written down for the finance team?"],
            ["For finance, the agent writes {answer} into the case notes so the campaign can be reconciled.",
             "The case must carry {answer}, which finance uses to reconcile the campaign."],
        ),
    ],
    "checkout_failure": [
        (
            "Which log do agents check in {issue} cases?",
            "the payment gateway log",
            ["Where can I see why the payment of {s} failed?",
             "Which system record explains a failed payment for {s}?"],
            ["The agent opens {answer} to see whether the bank, the card or the site stopped the payment.",
             "Reading {answer} usually shows the reason in a single line."],
        ),
        (
            "What do agents suggest in {issue} cases when the gateway declined?",
            "an alternative payment method",
            ["The bank side refused the charge for {s}. What do I recommend?",
             "If the processor rejected the payment of {s}, what's the next step to offer?"],
            ["When the gateway declined the charge, agents suggest {answer} and stay on hand while the customer retries.",
             "After a gateway decline, the agent proposes {answer}; retrying the same card rarely helps."],
        ),
    ],
    "damaged_in_transit": [
        (
            "What do agents file in {issue} cases?",
            "a damage claim with the carrier",
            ["What paperwork do we raise with the courier for {s}?",
             "Which claim gets lodged on behalf of {s}?"],
            ["Agents file {answer} using the customer's photos, so the courier bears the cost.",
             "In every such case the agent files {answer} on the day it is reported."],
        ),
        (
            "Which items should customers not be asked to return in {issue} cases?",
            "items damaged beyond use",
            ["Is there anything {s} can simply keep or throw away?",
             "Which goods do we not make {s} post back?"],
            ["Customers are not asked to post back {answer}; the photos are enough.",
             "There is no need to return {answer}, and agents say so up front."],
        ),
    ],
    "missing_item": [
        (
            "What do agents compare in {issue} cases?",
            "the packing slip with the order lines",
            ["How do I confirm what should have been in the box for {s}?",
             "Which documents should be checked against each other for {s}?"],
            ["The agent compares {answer} to see which product was left out.",
             "Setting {answer} side by side shows at once what was left behind."],
        ),
        (
            "What do agents check about the shipment in {issue} cases?",
            "whether the order shipped in more than one package",
            ["Before assuming the item is lost for {s}, what should be ruled out?",
             "Could the rest of the order for {s} still be on its way? What do I check?"],
            ["Before treating anything as lost, the agent checks {answer}; split shipments often arrive a day apart.",
             "It is worth checking {answer}, since the missing product may simply be in a second parcel."],
        ),
    ],
}  # fmt: skip

REMEDY_ASKS = [
    "How long after buying can we still give {a_phrase} to {s}?",
    "For {s}, what's the cutoff, counted from the order, for {a_phrase}?",
    "I'm dealing with {s}. Until when after their purchase is {a_phrase} allowed?",
    "Is there a time limit on {a_phrase} for {s}, and how long is it?",
    "{S} wants {a_phrase}. How many days from the purchase do they have?",
    "What's the deadline for {s} to still qualify for {a_phrase}?",
    "How many days does {s} get before {a_phrase} is off the table?",
    "Up to what point after checkout may support hand {s} {a_phrase}?",
    "Say {s} bought three weeks ago. Could they still get {a_phrase}, and what's the limit?",
    "What window applies when {s} requests {a_phrase}?",
]

ALLOWED_ASKS = [
    "What options am I allowed to give {s}?",
    "Which remedies can an agent put forward for {s}?",
    "{S} wants something to make it right. What does the policy let us offer?",
    "What compensation is permitted for {s}?",
    "What are the approved fixes support can propose to {s}?",
    "Which outcomes are agents permitted to suggest to {s}?",
    "What could {s} be offered under our rules?",
]


def fill(frame: str, s: str) -> str:
    return frame.replace("{S}", s[:1].upper() + s[1:]).replace("{s}", s)


# -- category care, fit and warranty ---------------------------------------------------------------------

# Care routines per kind of product (chosen by words in the category's name; `general` otherwise).
FAMILIES: dict[str, tuple[str, ...]] = {
    "footwear": ("shoe", "sneaker", "boot", "trail", "hiking", "footwear", "cleat"),
    "electronics": ("electronic", "tech", "tracker", "watch", "audio", "gadget"),
    "equipment": ("equipment", "bag", "gear", "golf", "ball", "fitness", "accessor", "sport"),
}


def family(category: str) -> str:
    low = category.lower()
    for fam, words in FAMILIES.items():
        if any(w in low for w in words):
            return fam
    return "apparel"


CARE_OPTIONS: dict[str, dict[str, list[str]]] = {
    "apparel": {
        "wash": ["cold water", "warm water", "hand wash only", "a gentle cycle in cold water"],
        "dry": ["air dry only", "tumble dry on low", "lay flat to dry"],
        "iron": ["iron on low heat", "do not iron"],
    },
    "footwear": {
        "wash": ["a soft brush and mild soapy water", "a damp cloth only", "a gentle cold hand wash"],
        "dry": ["air dry with newspaper inside", "dry at room temperature away from heaters"],
        "iron": ["remove the insoles to dry separately", "keep the insoles in while drying"],
    },
    "equipment": {
        "wash": ["a damp cloth and mild soap", "warm soapy water", "a quick rinse in fresh water"],
        "dry": ["air dry only", "wipe dry after each use", "dry in the shade"],
        "iron": ["store away from direct sunlight", "store in a cool, dry place"],
    },
    "electronics": {
        "wash": ["a lightly damp, lint-free cloth", "an alcohol-free wipe"],
        "dry": ["let it dry fully before charging", "wipe the charging contacts dry"],
        "iron": ["charge it at least once a month", "keep the firmware up to date"],
    },
}

CARE_QUESTIONS: dict[str, tuple[str, list[str], list[str]]] = {
    # fact → (canonical question with {cat}, asks with {cat}/{noun}, says with {answer}/{noun})
    "wash": (
        "How should products in the {cat} range be washed?",
        ["My {noun} got filthy. What's the right way to clean {it}?", "What cleaning method keeps {noun_pl} from the {cat} line in good shape?", "A customer wants to freshen up their {noun}. How should they go about that?", "Mud all over my new {noun} — how do I get {it} clean safely?", "What's the recommended way to get sweat and dirt out of {a_noun}?", "How do you suggest cleaning gear from the {cat} collection?", "Can I just throw my {noun} in with the regular laundry, or is there a better method?"],
        ["For {noun_pl} and the rest of the {cat} range, the cleaning method we recommend is {answer}.",
         "Washing instructions for {cat} products come down to one line: {answer}.",
         "When {noun_pl} from the {cat} line need cleaning, our advice is simple: {answer}.",
         "The {cat} care label reads {answer}, and stronger treatments only shorten the life of the materials.",
         "To clean {noun_pl}, the instruction from our {cat} specialists is {answer}; anything harsher wears the materials early.",
         "Keep cleaning gentle for {cat} items such as {noun_pl}: {answer}.",
         "The safest way to clean {cat} gear is {answer}, followed by a careful check of seams and fastenings."],
    ),
    "dry": (
        "How should products in the {cat} range be dried?",
        ["After cleaning my {noun}, how do I get {it} dry without ruining {it}?", "Once washed, what drying method suits {noun_pl} from this range?", "Is the dryer okay for my {noun}, or should I do something else?", "What's the safe way to dry {a_noun} after a wash?", "How should someone dry {noun_pl} from the {cat} line so they keep their shape?", "My {noun} is soaked. What's the best way to dry {it} out?"],
        ["Afterwards, {answer}; heat is the fastest way to warp or shrink {cat} products.",
         "To dry {noun_pl} and similar {cat} items, {answer}, and give them time before the next use.",
         "Drying matters as much as washing for the {cat} range: {answer}.",
         "Once clean, {answer}: a hot dryer or a radiator can ruin {noun_pl} in a single cycle.",
         "The drying instruction for {cat} products is short: {answer}.",
         "After washing {noun_pl}, {answer} and wait until they are completely dry before storing them."],
    ),
    "iron": (
        "What extra care tip applies to the {cat} range?",
        ["Is there one more habit that keeps {a_noun} lasting longer?", "Besides cleaning, what should owners of {noun_pl} keep in mind?", "Any other advice to help my {noun} last?", "What additional care step does the product team suggest for the {cat} collection?", "Other than washing and drying, what keeps {a_noun} in top condition?"],
        ["One more habit makes a difference for {noun_pl}: {answer}.",
         "For the {cat} collection, our product team also recommends that you {answer}.",
         "A final tip for the {cat} range: {answer}.",
         "Owners of {cat} products often forget one step, so here it is: {answer}.",
         "Beyond washing and drying, the specialists behind our {noun_pl} add one piece of advice: {answer}.",
         "To keep {cat} items at their best for longer, {answer}."],
    ),
    "fit": (
        "How do products in the {cat} range fit?",
        ["Should I order my usual size for {a_noun}, or do they come up different?", "How true to the chart are {noun_pl} in the {cat} line?", "Do {noun_pl} from {company} come up big or small?", "Will my regular size work for {a_noun}?", "How does sizing in the {cat} collection compare with normal sizes?"],
        ["Across the {cat} range, most styles run {answer}, so the usual size is the place to start.",
         "Our fitting team finds that {cat} styles run {answer}.",
         "Most {noun_pl} in this collection run {answer}, according to our fit testers.",
         "Sizing in the {cat} line tends to run {answer}; the measurements on each product page confirm it.",
         "Compared with standard charts, {cat} products run {answer}.",
         "Customer feedback and our own testing agree that {noun_pl} from this range run {answer}."],
    ),
    "between": (
        "What should customers between two sizes do for the {cat} range?",
        ["I'm halfway between two sizes for {a_noun}. Which way should I go?", "If the chart puts someone on the border of two sizes, what do we recommend?", "My measurements fall between sizes for {noun_pl}. Go bigger or smaller?", "What's the advice for a shopper stuck between two sizes in the {cat} line?", "Should someone in-between sizes round up or down for {a_noun}?"],
        ["If you fall between two sizes in the {cat} range, we suggest you {answer}.",
         "Customers on the border of two {cat} sizes should {answer}, according to our fit testers.",
         "Between sizes for {noun_pl}? The advice from our fitting team is to {answer}.",
         "When the chart puts you between two {cat} sizes, {answer}: it suits how these styles are cut.",
         "For anyone caught between sizes, the recommendation for {cat} products is to {answer}.",
         "Shoppers halfway between two sizes of {noun_pl} are best served if they {answer}."],
    ),
    "warranty": (
        "How long does the warranty on the {cat} range last?",
        ["My {noun} gave out after a while. How long {is} {it} covered for manufacturing faults?", "For how many months is {a_noun} protected against defects?", "What's the guarantee period on gear from the {cat} collection?", "If {a_noun} develops a manufacturing fault, how long is it covered?", "How much time does the manufacturer's cover last for {noun_pl}?"],
        ["Every item in the {cat} range carries a warranty of {answer} against manufacturing defects, counted from delivery.",
         "Manufacturing faults in {noun_pl} are covered for {answer} from the day the order arrives.",
         "The {cat} warranty lasts {answer} from delivery and covers faults in materials and workmanship.",
         "From the day they are delivered, {cat} products are protected against manufacturing defects for {answer}.",
         "Should a manufacturing defect appear, {noun_pl} are covered for {answer} after delivery.",
         "Cover against defects in the {cat} collection runs for {answer}, starting on the delivery date."],
    ),
}  # fmt: skip

# -- product-specific guides -----------------------------------------------------------------------------

PRODUCT_QUESTIONS: dict[str, tuple[str, list[str], list[str]]] = {
    "life": (
        "How long do {noun_pl} typically last with regular use?",
        ["Roughly when should I expect to replace my {noun} if I use {it} a lot?", "What lifespan can a customer expect from {a_noun} used several times a week?", "How many months of wear should I get out of {a_noun}?", "If I train regularly, how soon will my {noun} need replacing?", "What's the usual life of {noun_pl} with frequent use?"],
        ["With regular use, most {noun_pl} last {answer} before the materials lose their support.",
         "Used several times a week, {noun_pl} from {company} typically give {answer} of service.",
         "Expect {answer} of frequent use from well-kept {noun_pl}.",
         "Our wear testing puts the life of {noun_pl} at {answer} of regular training.",
         "Heavy users replace their {noun_pl} after {answer}; lighter use stretches that further.",
         "A typical lifespan for {noun_pl} in the {cat} range is {answer} with regular use."],
    ),
    "feature": (
        "What features do {company} {noun_pl} have?",
        ["What's special about how {company} builds its {noun_pl}?", "What tech goes into {a_noun} from {company}?", "Which design features do the {noun_pl} sold by {company} include?", "What makes {company}'s {noun_pl} stand out?", "What are the key construction details of {a_noun} from {company}?"],
        ["Our {noun_pl} combine {answer}.",
         "What sets the {noun_pl} of {company} apart is the combination of {answer}.",
         "Each model of {noun_pl} in the {cat} range is built around {answer}.",
         "Design-wise, {noun_pl} from {company} bring together {answer}.",
         "Two details define our {noun_pl}: {answer}.",
         "Look closely at {a_noun} from {company} and you will find {answer}."],
    ),
    "sign": (
        "What is the main sign that {noun_pl} need replacing?",
        ["How can I tell my {noun} {is} worn out?", "What should a customer look for to know their {noun} {is} past {its} best?", "What's the telltale sign that {a_noun} has reached the end of {its} life?", "When is it time to retire {a_noun}? What gives it away?", "Which symptom means my {noun} should be swapped for a new one?"],
        ["The clearest sign that {noun_pl} need replacing is {answer}.",
         "Replace {noun_pl} once you notice {answer}; carrying on risks discomfort or injury.",
         "Watch for {answer}: it means {noun_pl} have come to the end of their useful life.",
         "Most owners know it is time for new {noun_pl} when they spot {answer}.",
         "In {noun_pl}, {answer} is the signal of wear that no cleaning can fix.",
         "When {a_noun} shows {answer}, it is time to retire {it}."],
    ),
    "trouble": (
        "What should customers try first when {noun_pl} {problem}?",
        ["My {noun} {problem_short}. Is there a quick fix before I contact support?", "A customer says their {noun} {problem_short}. What do we suggest they try?", "What's the first thing to do if {a_noun} {problem_short}?", "Before sending back {noun_pl} that {problem}, what should someone try?", "Any home remedy for {noun_pl} that {problem}?"],
        ["If {noun_pl} {problem}, first {answer}; this solves most reports without a return.",
         "When {noun_pl} {problem}, the first thing to try is to {answer}.",
         "Should your {noun_pl} {problem}, {answer} before contacting support.",
         "Owners whose {noun_pl} {problem} can usually fix it at home: {answer}.",
         "A common report is that {noun_pl} {problem}. The quick fix is to {answer}.",
         "Rather than returning {noun_pl} that {problem} straight away, {answer}; it works in most cases."],
    ),
}  # fmt: skip

SIGNS = [
    "a flattened, creased midsole",
    "fabric that has thinned or gone shiny at the seams",
    "fastenings that no longer hold firmly",
    "a smooth, worn-down outsole",
    "elastic that no longer springs back",
    "stitching that has started to pull apart",
]

# (what they do, plural verb; the same, singular; the first thing to try)
TROUBLES = [
    ("start to smell", "starts to smell", "wash them and let them dry fully in open air"),
    (
        "feel too tight",
        "feels too tight",
        "loosen the fastenings and wear them around the house for a few days",
    ),
    ("squeak or rub", "squeaks or rubs", "check for trapped grit and dust the contact points with talc"),
    ("lose their shape", "loses its shape", "reshape them while damp and let them dry flat"),
    ("pill or fuzz", "pills or fuzzes", "remove the bobbles with a fabric shaver and wash inside out"),
    ("feel stiff", "feels stiff", "flex them gently by hand and wear them for a few short sessions"),
    ("slip out of place", "slips out of place", "readjust the straps or fastenings so they sit snugly"),
]


def noun_forms(noun: str) -> dict[str, str]:
    """How questions refer to a product noun: plural nouns ("Running Shoes") as a pair, singular ones with a/an."""
    low = noun.lower()
    plural = low.endswith("s") and not low.endswith("ss")
    return {
        "noun": low,
        "noun_pl": low if plural else f"{low}es" if low.endswith(("sh", "ch", "x")) else f"{low}s",
        "a_noun": f"a pair of {low}" if plural else f"{'an' if low[:1] in 'aeiou' else 'a'} {low}",
        "it": "them" if plural else "it",
        "is": "are" if plural else "is",
        "its": "their" if plural else "its",
    }


def pick_asks(rng: random.Random, frames: Sequence[str], sits: Sequence[str], k: int = 12) -> list[str]:
    """`k` distinct questions from the frames, each with a situation."""
    out: list[str] = []
    for frame in rng.sample(list(frames), min(k, len(frames))):
        out.append(fill(frame, rng.choice(list(sits))))
    return list(dict.fromkeys(out))


def format_all(items: Sequence[str], **values: Any) -> list[str]:
    return [t.format(**values) for t in items]


# -- prose around the facts --------------------------------------------------------------------------------

# Paragraphs per section of an article kind; each is a list of alternatives. Placeholders: {company},
# {subject} (lower case), {issue} (lower case issue name), {cat}, {noun_pl}.
SECTIONS: dict[str, list[list[str]]] = {
    "policy": [
        [
            "Cases about {issue} are among the ones customers feel most strongly about, because they usually arrive just when the customer was looking forward to using the product. A calm, clear reply makes a real difference to how they remember {company}.",
            "A customer who writes in about {issue} has often already spent time trying to fix the problem alone. Acknowledge that effort before asking for anything else, and make it clear that the case is now in good hands.",
            "Contacts about {issue} come in through every channel: email, chat and phone. Whatever the channel, the customer should get the same answer and the same options, which is why this article exists.",
            "This is one of the more common contact reasons at {company}, and most cases close on the first reply when the agent gathers the right details up front.",
        ],
        [
            "Keep the case record complete. Note what the customer reported, what was checked, which resolution was offered and on what date. A colleague picking up the case later should understand it without asking the customer to repeat themselves.",
            "Write the case notes as you go rather than at the end. Record the order number, the product, the customer's own description of the problem and every step you took, including checks that found nothing unusual.",
            "Every action belongs in the case history: the checks made, the resolution offered, and anything promised to the customer. Incomplete notes are the main reason cases get reopened.",
            "Good notes protect both the customer and the agent. Summarise the conversation in a few sentences, name the resolution offered, and add any photos or documents the customer sent.",
        ],
        [
            "When a customer asks for something outside this policy, explain kindly what can and cannot be done and why. Do not improvise a remedy: an offer outside these rules has to be honoured, and it is logged as a policy breach.",
            "Customers sometimes ask for a gesture that the policy does not cover. Listen, acknowledge the frustration, and explain the options that are available; supervisors review any exception before it is offered.",
            "If a customer is unhappy with the options available, offer to escalate to a team lead rather than promising something the policy does not allow. Team leads can review unusual circumstances.",
            "Never promise a remedy before checking the purchase date against the windows in this article. A promise made in good faith but outside the rules still counts as a breach.",
        ],
        [
            "Close the case only once the customer has confirmed that the resolution works for them, or after two reminders with no reply. A short, friendly closing message should say what was done and how to reach us again.",
            "After the resolution, follow up to confirm the customer received what was promised. Cases are closed when the customer confirms, or when a week passes with no further reply.",
            "Before closing, double-check that the resolution has actually been processed in the order system. A closing note summarising the outcome helps if the customer writes back later.",
            "A case is resolved when the promised remedy has been processed and the customer knows what happens next. Set a reminder if anything depends on the carrier or the warehouse.",
        ],
        [
            "Tone matters as much as the outcome. Use the customer's name, keep sentences short, and avoid internal terms such as ticket codes or warehouse abbreviations. If the customer is upset, acknowledge it once, sincerely, and then move to what you can do.",
            "Write as you would speak to someone standing in front of you: plainly and politely. Avoid blaming the carrier, the warehouse or the customer; focus on what happens next and when.",
            "A good reply answers the question the customer actually asked before adding anything else. Offer one clear next step, give a realistic time frame, and avoid promising dates you do not control.",
            "Customers notice when a reply is copied from a script. Adapt the wording to their message, mention the product by name, and refer to details they gave you so they know you read it.",
            "Keep replies brief and concrete. One short paragraph explaining what was found and one explaining what will happen next is usually enough; long replies tend to raise new questions.",
        ],
        [
            "Mistakes we see in reviews include offering a remedy before checking the order date, promising a refund to a payment method that has since expired, and closing cases before the customer has replied. Each of these leads to a second contact that could have been avoided.",
            "Quality reviews sample closed cases every week. The most common findings are missing notes, remedies offered outside their window, and replies that did not answer the customer's question. Reviewers share examples in the weekly team meeting.",
            "Team leads review a share of every agent's cases each month against this article. Findings are used for coaching, not blame, but repeated remedies outside the rules are escalated.",
            "When in doubt about whether a remedy is allowed, check the date arithmetic twice: the window counts calendar days from the purchase date shown on the order, not from the day the customer contacted us.",
        ],
        [
            "Remember that the customer may have contacted us before about the same order. Read the whole case history and the previous replies first; repeating a question the customer has already answered is one of the most frequent complaints in our surveys.",
            "Check the customer's other open cases before replying. If the same order is being handled elsewhere, merge the cases or coordinate with the colleague who owns the other one, so that the customer gets one consistent answer.",
            "Look at the customer's order history as a whole. A loyal customer with many orders and few contacts deserves the same rules as anyone else, but the tone of the reply can acknowledge their history with us.",
            "If the customer mentions a safety concern, such as a product that caused an injury, stop and escalate the case to a team lead immediately, whatever the issue; safety reports follow a separate procedure.",
        ],
    ],
    "general": [
        [
            "This article is written for customers and for the support team alike, so the same answer is given whatever the channel. Where the rules depend on the order date, the date shown on the order confirmation is the one that counts.",
            "{company} keeps its rules short and predictable so that customers know where they stand. The details below apply to every order placed through our website, our app or our stores.",
            "We review this policy regularly, and the version published here is the one agents follow. Orders are handled under the rules in force on the day they were placed.",
            "Customers ask about this topic more than almost any other, so this page sets out the rules in plain words, with the reasons behind them where that helps.",
        ],
        [
            "If something is unclear, the support team is happy to walk through a specific order. Have the order number ready; it appears in the confirmation email and in the account's order history.",
            "Customers who shop as guests can still use these services: the order number and the email address used at checkout are enough for us to find the order.",
            "Agents can see every order, payment and adjustment on an account, so customers do not need to keep receipts for online purchases. In-store receipts should be kept for the same period.",
            "Questions that the article does not answer can be sent through chat or email. Replies usually arrive within one business day, and faster during weekday afternoons.",
        ],
        [
            "Exceptions are rare and need a team lead's approval. When one is made, it is noted on the customer's account so that the same decision is applied consistently later.",
            "These rules apply in the same way to full-price and sale items unless a promotion says otherwise. Promotional terms are shown on the product page at the time of purchase.",
            "Business customers and team orders follow the same rules, although very large orders may be handled by a dedicated account manager.",
            "Nothing in this policy limits a customer's statutory rights, which apply in addition to what is described here.",
        ],
        [
            "Agents apply this policy the same way for every customer. Where a decision depends on a date, the agent checks the order history rather than relying on what the customer remembers, and explains the result with the dates shown.",
            "When a customer's request falls just outside what the policy allows, the agent explains the rule and the reason for it, and offers whatever alternative the policy does allow. Team leads can review genuinely unusual situations.",
            "Agents read the order history before replying, so that the answer fits the customer's actual order rather than the general case. Where the order was a gift, the gift recipient can use the same services with the order number.",
            "The support team records every request under this policy on the customer's case, together with the outcome, so that a later contact can pick up where the previous one left off.",
        ],
        [
            "A frequent misunderstanding is that the rules restart when an item is exchanged or an order is split into several parcels. They do not: the dates always run from the original purchase.",
            "Customers sometimes assume that items bought in a sale or with a promotion are excluded. Unless the promotion said so on the product page, the same rules apply to them.",
            "Some customers expect the rules of other retailers to apply. Ours may be more or less generous on specific points, so it is always worth checking this page rather than relying on experience elsewhere.",
            "One common source of confusion is the difference between the order date and the delivery date. Unless this page says otherwise, the order date printed on the confirmation is the one that counts.",
        ],
        [
            "Orders shipped outside the United States follow the same rules, but carrier times and customs checks can add several days. International customers should allow for that when planning a return or an exchange.",
            "For orders collected in store, the same rules apply from the day of collection. Store teams can help in person and log the request in the same system the support team uses.",
            "Orders placed through the mobile app are handled exactly like orders placed on the website; the app shows the same order history and the same options.",
            "Team and club orders placed through an account manager follow these rules as well, although the account manager coordinates any returns or replacements for the group.",
        ],
        [
            "We may update this policy from time to time. Changes apply to orders placed after the date of the change, never retroactively, and the date of the last update is shown on the help centre.",
            "Feedback on this policy is welcome. Suggestions sent through the help centre are read by the customer experience team, and several recent changes started as customer ideas.",
            "If a customer believes the policy was applied incorrectly, they can ask for a review. A team lead looks at the case within two business days and replies with the outcome.",
            "Customers who need help in another language can ask for it; the support team works with interpreters for the most common languages.",
        ],
    ],
    "care": [
        [
            "Good care is the simplest way to make {noun_pl} and everything else in our {cat} range last. Most damage we see in returns comes from heat, harsh detergents or storing items while still damp, not from normal wear.",
            "The {cat} range is built from technical materials that keep their performance far longer when they are looked after properly. This guide collects the advice our product team gives most often.",
            "Every product in the {cat} range is tested for durability before it reaches our shelves, but how it is cleaned and stored at home matters just as much as how it was made.",
            "Customers often ask how to keep their {cat} gear looking new. The answer is mostly about gentle cleaning and patience while things dry.",
        ],
        [
            "Store clean items somewhere cool, dry and airy. Plastic bags trap moisture and encourage odours, while direct sunlight fades colours and weakens elastic over a summer.",
            "Rotate between two items if you train often: giving materials a day to recover and dry out fully noticeably extends their life.",
            "Check labels and care symbols before the first clean: a few products in the range use bonded seams or coatings that need extra care.",
            "Small repairs, such as a loose thread or a worn lace, are best done early, before they spread. Our stores can advise on what is worth repairing.",
        ],
        [
            "Fit matters as much as care. Our size charts are based on body measurements rather than on other brands' sizes, so measuring once is worth the two minutes it takes.",
            "When choosing a size, think about how the item will be worn: over a base layer, with thick socks, or on its own. The charts on each product page show measurements in both inches and centimetres.",
            "Exchanges for a different size follow the standard exchange rules, so there is no risk in trying something on at home, provided tags stay attached.",
        ],
        [
            "Damage caused by wear and tear, accidents or incorrect care is not a manufacturing defect, but our team will always look at a product before deciding. Send clear photos with any claim.",
            "A warranty claim needs the order number, a short description of the fault and a couple of photos. Claims are answered within a few business days.",
            "If a product fails within its warranty, we repair, replace or refund it, depending on the fault and on what is in stock.",
        ],
        [
            "The materials used across the range are chosen for performance: synthetic fibres that move moisture away from the skin, foams that return energy, and coatings that shed water. Each of them reacts badly to high heat, which is why cool washes and air drying are recommended throughout.",
            "Most products in the range mix several materials, such as mesh, knit, rubber, foam and bonded tapes. Each ages differently, and the gentlest routine that suits all of them is the one described here.",
            "Technical fabrics and foams lose their properties gradually rather than all at once. Regular gentle cleaning slows that process; occasional harsh cleaning speeds it up more than months of use.",
            "Colours in the range are fixed to last, but deep shades may release a little dye in the first washes. Washing them separately at first avoids marking lighter items.",
        ],
        [
            "Between seasons, clean items before putting them away, make sure they are completely dry, and store them loosely rather than compressed. A breathable bag keeps dust off without trapping moisture.",
            "For long storage, avoid attics and garages, where temperature swings damage adhesives and elastic. A wardrobe or a shelf indoors is ideal.",
            "Items used outdoors collect grit and salt that wear materials from the inside. A quick rinse or brush after muddy or salty sessions keeps them performing much longer.",
            "If something gets soaked during use, open it up, remove any inserts and let air circulate. Drying within a day prevents odours and mildew.",
        ],
        [
            "If something goes wrong, the support team can help by chat or email. Have the order number ready and, where possible, a photo of the problem; agents can usually tell straight away whether it is a fault.",
            "Not sure whether a problem is normal wear? Send us a photo. Our agents see many products every day and can advise on repair, replacement or a warranty claim.",
            "Our stores can also look at a product in person and, for some items, carry out small repairs on the spot.",
        ],
        [
            "Our customers' most common care mistakes are washing with towels or jeans, which rub technical fabrics, using bleach on bright colours, and drying items on a radiator. Avoiding those three habits alone makes most products last noticeably longer.",
            "A simple routine works best: clean soon after use, dry slowly, store loosely. Products treated this way regularly outlast their warranty by a wide margin.",
            "Do not be tempted to speed things up with a hair dryer, an oven or direct sun. Fast heat is the main cause of warped soles, melted bonding and shrunken fabric that we see in returns.",
            "If a product has a removable part, such as an insole, a liner or a strap, clean and dry that part separately: it dries faster and the product keeps its shape.",
        ],
    ],
    "product": [
        [
            "Our {noun_pl} are among the most popular items in the {cat} range, and they are also the ones customers ask most about. This article brings together what our product team and our support agents have learned.",
            "Choosing and looking after {noun_pl} is easier than it looks. Here is what to know, from the first wear to the day it is time for a replacement.",
            "Customers buy {noun_pl} for many reasons, from daily training to weekend outings. Whatever the use, a few habits keep them performing as they did on day one.",
        ],
        [
            "Break new items in gradually: short sessions for the first week let materials settle and show any fit problem while the item can still be exchanged.",
            "Keep a rough note of how often you use them. Most wear comes from the number of sessions, not from the calendar, so heavy users will replace them sooner.",
            "Clean off mud, sweat and salt soon after use. Left for days, they stiffen fabrics and break down glues and coatings.",
            "Use them for what they were designed for: gear stretched beyond its purpose wears unevenly and is not covered for that wear.",
        ],
        [
            "If a problem persists after these steps, contact support with the order number and a photo. Agents can tell quickly whether it is a fault covered by warranty.",
            "Most questions about {noun_pl} can be answered by chat in a few minutes. For anything that looks like a defect, please keep the item and its packaging until we have replied.",
            "Our agents see thousands of questions about products like these, so do not hesitate to ask; there is usually a simple explanation.",
        ],
        [
            "When choosing {noun_pl}, think first about where and how often they will be used. Our product pages list the intended use, the materials and the fit, and customer reviews often add useful detail about comfort over time.",
            "Before buying, compare the product's intended use with your own plans. A model designed for occasional use will wear faster under daily training, while a performance model may feel firm for casual wear.",
            "If you are replacing an older pair or piece, compare the two side by side when the new one arrives. Differences in fit are easiest to judge that way, and unworn items can still be exchanged.",
            "Customers who are new to {noun_pl} often ask which model to start with. Our agents are happy to recommend one based on how it will be used.",
        ],
        [
            "Store {noun_pl} somewhere dry and away from direct sunlight when they are not in use. Heat and ultraviolet light are the two things that age materials fastest, even when an item is sitting unused.",
            "After each use, let them air out before putting them away. Moisture trapped in a bag or a cupboard is the most common cause of odours and early wear.",
            "When travelling, pack them loosely and separately from wet or dirty items. A simple cloth bag protects them and keeps the rest of the luggage clean.",
            "Keep the original packaging for the first weeks. If anything needs to go back, it makes the return simpler and protects the item on its way.",
        ],
        [
            "We design our products to last, and we also take them back at the end of their life. Worn items can be dropped off in our stores, where they are sorted for reuse or recycling.",
            "Looking after your gear is also good for the planet: every extra month of use means one less replacement. Small repairs, such as new laces or a fresh insole, go a long way.",
            "Many parts, such as laces, insoles and straps, are available separately, so a product with one worn part does not need to be replaced entirely.",
        ],
        [
            "Our agents regularly hear from customers who think their {noun_pl} are faulty when they simply need a small adjustment. The quick fixes in this article solve most of those cases in minutes.",
            "Before contacting us about {noun_pl}, it is worth checking the fit, the way they are fastened and how they were last cleaned; these explain most of the problems customers report.",
            "Most questions about {noun_pl} concern fit, comfort in the first weeks and how long they should last. The sections above cover all three.",
            "Feedback from customers shapes the next versions of our {noun_pl}. Reviews on the product page are read by the product team, including the critical ones.",
        ],
        [
            "Comfort should improve over the first few sessions as materials adapt. If discomfort persists after a week of regular use, the size or model may not be right, and an exchange is usually the best answer.",
            "A little stiffness at first is normal for new gear. Persistent pain, pressure points or rubbing are not, and the product should be exchanged for a better fit while it is still in new condition.",
            "If you use several similar items, rotate them. Alternating gives materials time to recover and spreads wear, so each one lasts longer than it would alone.",
            "For competitions or long events, use gear you have already worn a few times rather than something brand new. That way any fit issue shows up in training rather than on the day.",
        ],
    ],
}  # fmt: skip


# Body paragraphs per article of each kind: with the pools below (`body_pool`), no paragraph is in more than
# two articles of a kind when the kind has up to 2 * len(pool) / BODY_PARAGRAPHS articles (12 policies, 11
# of each other kind in the default org).
BODY_PARAGRAPHS = {"policy": 7, "general": 8, "care": 11, "product": 12}


def openings(kind: str) -> list[str]:
    return [*SECTIONS[kind][0], *OPENINGS_MORE.get(kind, [])]


def body_pool(kind: str) -> list[str]:
    """The kind's body paragraphs, taken from its sections in turn (one of each section, then the next of
    each ...), so a window of consecutive paragraphs covers every section's topic."""
    sections = [list(options) for options in SECTIONS[kind][1:]]
    more = BODY_MORE.get(kind, [])
    for i, extra in enumerate(more):
        sections[i % len(sections)].append(extra)
    out: list[str] = []
    for depth in range(max(len(x) for x in sections)):
        out.extend(x[depth] for x in sections if depth < len(x))
    return out


def rotate(options: Sequence[str], ordinal: int, salt: int = 0) -> str:
    """The option of the article at `ordinal` among its kind: consecutive articles take consecutive options,
    so each option serves at most ceil(articles / options) articles."""
    return options[(ordinal + salt) % len(options)]


def paragraphs(
    rng: random.Random, kind: str, values: Mapping[str, str], ordinal: int | None = None
) -> list[str]:
    """The opening and `BODY_PARAGRAPHS[kind]` body paragraphs of an article of the kind, filled with the
    values: the article at `ordinal` among its kind takes the opening at that position and the window of
    body paragraphs that starts at ordinal * BODY_PARAGRAPHS (None: positions drawn from `rng`)."""
    if ordinal is None:
        ordinal = rng.randrange(10_000)
    pool = body_pool(kind)
    k = BODY_PARAGRAPHS[kind]
    body = [pool[(ordinal * k + i) % len(pool)] for i in range(min(k, len(pool)))]
    return [t.format(**values) for t in [rotate(openings(kind), ordinal), *body]]


# -- company-wide articles: per subject, per planted fact (in `world._knowledge` order): (asks, says) ---------

GENERAL: dict[str, list[tuple[list[str], list[str]]]] = {
    "return_policy": [
        (["I bought something last month and don't want it anymore. How long do I have to send it back?",
          "What's the deadline for sending back an unwanted order to {company}?"],
         ["Unworn items in their original packaging can be sent back within {answer} of purchase, for any reason.",
          "Customers have {answer} from the purchase date to return an item they no longer want."]),
        (["My item has a flaw. How soon must I tell you about it to get all my money back?",
          "How quickly does a customer need to flag a fault if they want their money back in full?"],
         ["A fault must be reported within {answer} of purchase for the customer to receive a full refund; later reports are handled under the warranty.",
          "To qualify for a full refund on a faulty item, report the defect within {answer} of buying it."]),
    ],
    "exchange_policy": [
        (["The size I picked is wrong. How long can I wait before swapping it?",
          "How much time does a shopper get to trade an item for another size?"],
         ["Swapping an item for another size is free for {answer} after purchase, as long as the tags are still on.",
          "A size swap can be requested for {answer} from the order date."]),
    ],
    "order_cancellation": [
        (["I placed an order by mistake. How long do I have to stop it?",
          "After checkout, how much time does a customer have to call the order off?"],
         ["Orders can be cancelled free of charge within {answer} of being placed, provided they have not yet shipped.",
          "The cancellation window is {answer} from the moment the order is placed."]),
    ],
    "store_credit": [
        (["I was given credit on my account. How long before it runs out?",
          "Once a customer receives account credit, how long can they spend it?"],
         ["Store credit stays valid for {answer} from the day it is issued and can be used on any product.",
          "Credit issued to an account can be spent for {answer}."]),
    ],
    "loyalty_program": [
        (["How fast do rewards build up when I shop?",
          "What's the earning rate of the rewards scheme per dollar?"],
         ["Members earn {answer} for every dollar they spend, credited once the order is delivered.",
          "Every dollar spent earns {answer}."]),
        (["Will my rewards balance disappear if I don't shop for a while?",
          "Is there a use-by date on the reward balance?"],
         ["A common question is whether the balance runs out. {answer}.",
          "Members often ask whether their balance can lapse: {answer}."]),
        (["If I spend a hundred dollars, what do I get in rewards?",
          "How much does a $100 order add to a member's balance?"],
         ["For example, a $100 order adds {answer} to the balance.",
          "In practice, a $100 purchase brings in {answer}."]),
        (["When something goes wrong, how many points can support add as a goodwill gesture?",
          "What's the standard points top-up support gives as an apology?"],
         ["When support credits points as compensation, the standard amount is {answer}.",
          "As a goodwill gesture, agents credit {answer} to the member's account."]),
    ],
    "shipping_policy": [
        (["How much do I need to spend to skip the delivery fee?",
          "What's the minimum basket for not paying postage?"],
         ["Standard delivery is free on {answer}; smaller orders pay a flat fee shown at checkout.",
          "Shipping costs nothing on {answer}."]),
        (["With the regular delivery option, when will my parcel arrive?",
          "How long does the cheapest delivery usually take?"],
         ["Standard shipping takes {answer} from dispatch.",
          "Standard delivery arrives within {answer} once the parcel leaves the warehouse."]),
        (["If I pay for the faster delivery, how quickly does it come?",
          "How long does the quick delivery option take?"],
         ["Express shipping takes {answer} and can be chosen at checkout.",
          "Express parcels arrive in {answer}."]),
    ],
    "warranty_policy": [
        (["How long are boots and gear covered against manufacturing faults?",
          "For how long are shoes and equipment protected if they turn out faulty?"],
         ["Footwear and equipment carry a warranty of {answer} against manufacturing defects.",
          "Manufacturing defects in footwear and equipment are covered for {answer}."]),
    ],
    "discount_codes": [
        (["I got a code from support as an apology. How long can I use it?",
          "Does an apology coupon from the service team have an end date?"],
         ["A discount code issued by support stays valid for {answer} from the day it is sent.",
          "Service discount codes can be used for {answer}."]),
        (["How much does the apology coupon from the service team take off?",
          "What reduction does a service code give on the next order?"],
         ["The code gives {answer} the next order, excluding gift cards.",
          "Each service code takes {answer} one order."]),
    ],
    "free_shipping_voucher": [
        (["Support sent me a voucher for free delivery. When does it lapse?",
          "How long can a customer keep a postage-free voucher before it's void?"],
         ["A free shipping voucher can be redeemed for {answer} after it is issued.",
          "Free shipping vouchers stay valid for {answer}."]),
    ],
    "price_match": [
        (["I found what I bought cheaper elsewhere. How long after buying can I ask you to match it?",
          "Until when after a purchase can a shopper request that we match a lower price?"],
         ["Customers can ask for a price match within {answer} of purchase, with a link to the lower offer.",
          "A price match can be requested for {answer} after buying."]),
    ],
    "gift_cards": [
        (["Is there a date by which a gift card has to be spent?",
          "Can a gift voucher run out if it sits in a drawer for years?"],
         ["Customers often ask whether gift cards lapse. {answer}.",
          "A frequent question is whether a gift card can run out: {answer}."]),
    ],
}  # fmt: skip

SUBJECT_PROSE: dict[str, str] = {
    "return_policy": "Returns are free using the prepaid label from the returns portal. Items must be unworn, unwashed and in their original packaging with tags attached; footwear should be tried on indoors only. Refunds go back to the original payment method within five business days of the return arriving at the warehouse.",
    "exchange_policy": "An exchange ships as soon as the original item is scanned by the carrier, so customers do not wait for it to reach the warehouse. If the new size is out of stock, the customer can choose another colour, wait for a restock, or take a refund instead.",
    "order_cancellation": "Once an order has been handed to the carrier it can no longer be cancelled, but it can be returned under the normal return rules. Cancelled orders are refunded in full, including any delivery charge, within three business days.",
    "store_credit": "Credit is added to the customer's account and applied automatically at checkout. It cannot be exchanged for cash, but it can be combined with a promotion and used across several orders until the balance is spent.",
    "loyalty_program": "Membership is free and starts as soon as a customer creates an account. Points can be redeemed at checkout in blocks of 500, and members receive early access to seasonal collections and a birthday reward each year.",
    "shipping_policy": "Orders placed before 2 pm on a business day usually leave the warehouse the same day. Every parcel is tracked, and the tracking link is sent by email as soon as the carrier scans it. Deliveries to remote areas may take one or two extra days.",
    "warranty_policy": "The warranty covers faults in materials and workmanship, such as sole separation, failed zips or broken stitching under normal use. It does not cover normal wear, accidents or damage from incorrect care. Claims are made through the support team with the order number and photos.",
    "discount_codes": "Support issues service discount codes when an order did not go as planned. A code is tied to the customer's account, works once, and cannot be combined with another code; it can be combined with sale prices.",
    "free_shipping_voucher": "Vouchers are added to the customer's account and applied automatically to the next order, whatever its value, and cover standard delivery. They cannot be exchanged for cash or transferred to another account.",
    "price_match": "We match the price of an identical item, same model, colour and size, sold new by a major retailer. The difference is refunded to the original payment method. Marketplace sellers, auctions and clearance events are not eligible.",
    "gift_cards": "Gift cards are sold in amounts from $10 to $500 and can be used online and in store, across several orders. A lost card can be replaced if the customer still has the purchase receipt or the confirmation email.",
}

# What a policy article's example messages call the product ("My {product} fell apart" must never read
# "My the product"). Singular nouns only: the messages say "the {product} is ...", which a plural ("the trail
# shoes is") would break. WEARABLES have a size (the size examples use them).
WEARABLES = ["jacket", "hoodie", "tank top", "rain jacket", "fleece", "sports bra", "running vest"]
EXAMPLE_PRODUCTS = [*WEARABLES, "gym bag", "backpack"]
SOLED = ["hiking boot", "running shoe", "trail shoe"]  # for messages about a sole


def example_product(rng: random.Random, issue_key: str, message: str) -> str:
    """A product that fits the example message: one with a sole or a size where the message needs it."""
    if "sole" in message:
        return rng.choice(SOLED)
    return rng.choice(WEARABLES if "size" in issue_key else EXAMPLE_PRODUCTS)


# Further subject-specific paragraphs of the company-wide articles (each article's own text).
SUBJECT_MORE: dict[str, list[str]] = {
    "return_policy": [
        "To start a return, customers open the returns portal from their order history, choose the items and the reason, and print the label or show the QR code at a drop-off point. Several items from the same order can travel in one parcel; items from different orders need separate labels so the warehouse can match them.",
        "Items that come back used, washed or damaged by the customer cannot be refunded in full. In that case the warehouse contacts the customer with the options, which may include sending the item back at no cost. Personalised products, opened hygiene items such as swim caps and socks, and gift cards cannot be returned unless they are faulty.",
    ],
    "exchange_policy": [
        "Exchanges are started from the order history, like returns: the customer chooses the item, the new size or colour, and prints the label. The replacement is reserved at once, so a popular size cannot sell out while the original item is travelling back.",
        "Only one exchange per item is free; a second exchange of the same item is treated as a return and a new order. Exchanges for a different product, rather than a different size or colour of the same product, are also handled as a return and a new order, so that price differences are settled correctly.",
    ],
    "order_cancellation": [
        "Customers can cancel from the order page while the status still reads 'Processing'. When the button is greyed out, the warehouse has already started picking, and the support team can try to intercept the order, although this is not guaranteed.",
        "Partial cancellations are possible: a single item can be removed from an order that has not yet shipped, and the rest of the order continues as normal. Any promotion that depended on the order total is recalculated when an item is removed.",
    ],
    "store_credit": [
        "Store credit is issued when a customer chooses it instead of a refund, or by the support team as a remedy. The account's wallet shows the balance, the date each amount was issued and the date it lapses, and customers receive a reminder email two weeks before any credit runs out.",
        "Credit is tied to the account that received it and cannot be moved to another account, even within a family. When an order paid partly with credit is returned, the credit part is returned as credit and the rest to the original payment method.",
    ],
    "loyalty_program": [
        "Points appear as pending when an order is placed and become available once the return window for the order has passed. If an item is returned, the points it earned are removed. Members can see every movement of their balance in the rewards section of their account.",
        "Members move up a tier after spending $500 in a calendar year, which adds free express shipping and a larger birthday reward. Tiers are reviewed every January based on the previous year's spending, and nobody drops more than one tier at a time.",
    ],
    "shipping_policy": [
        "Customers can change the delivery address until the order leaves the warehouse. After that, the carrier's own redirection service may be available through the tracking link. Parcels that cannot be delivered are held at a local depot for seven days before they return to us.",
        "Deliveries need a signature only for orders above $500. Otherwise the carrier may leave the parcel in a safe place or with a neighbour, and the delivery photo appears in the tracking history. If a parcel marked as delivered cannot be found, the customer should contact support within seven days.",
    ],
    "warranty_policy": [
        "To claim, the customer contacts support with the order number, a short description and photos of the fault. The team replies within five business days with a decision. Approved claims are settled by repair, replacement, or refund if neither is possible.",
        "Apparel follows a shorter cover than footwear and equipment, set out in each category's care guide. A replacement product carries the remainder of the original cover, not a new one. Products bought from other retailers are covered by those retailers.",
    ],
    "discount_codes": [
        "Codes are sent by email and also appear in the account's wallet, so they are not lost if the email is deleted. A code is entered in the promotion field at checkout; if the order is later returned, the code is not reissued.",
        "Marketing codes from newsletters or partner sites follow their own terms, printed with each code. Support cannot extend or combine marketing codes, but it can check why a code was rejected and explain the reason to the customer.",
    ],
    "free_shipping_voucher": [
        "Only one voucher can be used per order, and a voucher does not cover express upgrades; customers who want express delivery pay the difference between standard and express. Unused vouchers lapse without any cash value.",
        "Vouchers are usually issued when a delivery went wrong, such as a late or damaged parcel. The support team records the reason on the case, and the voucher shows in the account's wallet with its end date.",
    ],
    "price_match": [
        "The lower price must be current, publicly available and for delivery to the same country. Agents check the competitor's page while the customer is in contact; screenshots alone are not enough because prices change quickly.",
        "Price matches are limited to one per item and three per customer per year. We also honour our own price drops: if the price of an item falls on our site after purchase, the difference can be refunded under the same time limit.",
    ],
    "gift_cards": [
        "The balance of a gift card can be checked on the gift card page or at any store. Cards can be combined with other payment methods and with promotions, but they cannot be used to buy other gift cards.",
        "Gift cards cannot be exchanged for cash except where the law requires it. Purchases paid with a gift card and then returned are refunded onto a new gift card, so the value is never lost.",
    ],
}

for _key, _extra in SUBJECT_MORE_EXTRA.items():
    SUBJECT_MORE.setdefault(_key, []).append(_extra)
