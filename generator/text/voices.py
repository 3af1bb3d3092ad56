"""How people write to support: personas and phrase pieces that the offline writer combines.

Templates repeat whole sentences; people do not. The pieces here are short (mostly under eight words) and
are combined slot by slot (`compose`), so a closing such as "Thanks so much for sorting this out" is one of
hundreds rather than one line shared by a twentieth of all cases. A *persona* is drawn once per customer
(seeded by the customer), so one customer keeps one voice across cases: how they greet, how long they
write, whether they sign, and how often they mention the order date or the price (people rarely do).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass


def compose(rng: random.Random, *slots: Sequence[str]) -> str:
    """One piece per slot, joined as written (pieces carry their own spaces and punctuation)."""
    return "".join([rng.choice(slot) for slot in slots])  # `choice` indexes any sequence as it would a list


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# Some people write "I will" where others write "I'll": a writer's habit (agents and customers alike), which
# also keeps stock phrases from reading identically across an org's emails and chats.
CONTRACTIONS = {
    "I'll": "I will", "I've": "I have", "I'm": "I am", "I'd": "I would", "we'll": "we will",
    "we've": "we have", "we're": "we are", "you're": "you are", "you'll": "you will", "you've": "you have",
    "let's": "let us", "it's": "it is", "that's": "that is", "there's": "there is", "don't": "do not",
    "doesn't": "does not", "didn't": "did not", "can't": "cannot", "won't": "will not", "isn't": "is not",
    "wasn't": "was not", "haven't": "have not", "hasn't": "has not", "couldn't": "could not",
    "wouldn't": "would not", "shouldn't": "should not", "here's": "here is", "what's": "what is",
}  # fmt: skip
_CONTRACTION = re.compile(r"\b[A-Za-z]+'[a-z]+\b")  # any word with an apostrophe; expanded if listed
_EXPANSIONS = {k.lower(): v for k, v in CONTRACTIONS.items()}


def spelled_out(text: str) -> str:
    """`text` with its contractions written in full ("I'll" -> "I will", "Let's" -> "Let us")."""

    def full(m: re.Match[str]) -> str:
        word = m.group(0)
        out = _EXPANSIONS.get(word.lower())
        if out is None:  # "Sam's", "o'clock": not a contraction
            return word
        return out[:1].upper() + out[1:] if word[:1].isupper() else out

    return _CONTRACTION.sub(full, text) if "'" in text else text


@dataclass(frozen=True)
class Persona:
    greeting: str  # "" for none
    signoff: str  # "" for none
    full_name: bool
    verbosity: int  # 0 short, 1 medium, 2 long
    date_rate: float  # how often they mention the order date
    price_rate: float  # how often they mention the price
    exclaims: bool


GREETINGS = [
    "Hi,", "Hello,", "Hi there,", "Hello there,", "Hi team,", "Hey,", "Good morning,", "Good afternoon,",
    "Dear support,", "Hello support team,", "To whom it may concern,", "Hi folks,", "Hey there,",
    "Dear customer service,", "Hiya,", "Morning,",
]  # fmt: skip
SIGNOFFS = [
    "Thanks,", "Best,", "Regards,", "Thank you,", "Cheers,", "Best regards,", "Kind regards,", "Many thanks,",
    "Thanks again,", "All the best,", "Sincerely,", "Warmly,", "Take care,", "-",
]  # fmt: skip


def persona(rng: random.Random) -> Persona:
    return Persona(
        greeting="" if rng.random() < 0.25 else rng.choice(GREETINGS),
        signoff="" if rng.random() < 0.3 else rng.choice(SIGNOFFS),
        full_name=rng.random() < 0.3,
        verbosity=rng.choices([0, 1, 2], weights=[0.35, 0.45, 0.2])[0],
        date_rate=rng.choice([0.0, 0.05, 0.1, 0.2, 0.35]),
        price_rate=rng.choice([0.0, 0.0, 0.05, 0.1, 0.2]),
        exclaims=rng.random() < 0.2,
    )


# -- case descriptions ----------------------------------------------------------------------------------------

LEAD_A = [
    "I'm writing about", "This is about", "Quick note about", "I need help with", "Reaching out about",
    "Writing in regarding", "I have a question about", "Contacting you about", "Following up on",
    "Just a heads-up about",
]  # fmt: skip
LEAD_B = [
    " a recent order.", " something I bought from you.", " my last order.", " an order from your site.",
    " a purchase.", " my delivery.", " an item I ordered.", " an order I placed online.",
]  # fmt: skip

CLOSE_A = [
    "Thanks", "Thank you", "Many thanks", "Thanks a lot", "Thanks so much", "Appreciate it", "Thanks again",
    "Grateful", "Thank you kindly", "Thanks heaps",
]  # fmt: skip
CLOSE_B = [
    " for looking into this", " for your help", " for checking", " in advance", " for sorting this out",
    " for any help", " for getting back to me", " for your time", " for the help", " for taking a look",
    " for handling this",
]  # fmt: skip
CLOSE_C = [".", "!", ". Looking forward to hearing back.", ". Talk soon.", ".", ". Hope to hear soon."]

# What the customer asks for at the end: a question (TONE_Q + TONE_B + a question ending) or a request
# (TONE_I + TONE_B + a statement ending).
TONE_Q = [
    "Could you", "Would you", "Can you", "Could you please", "Would you be able to", "Is there any way you could",
    "Can someone",
]  # fmt: skip
TONE_Q_END = {
    "polite": ["?", "? No rush.", "? Thanks for your patience.", "?"],
    "frustrated": ["?", "? This is the second time I've asked.", " today?", " quickly?"],
    "brief": ["?"],
    "detailed": ["?", "? I kept the box and tags.", "? Photos are available.", "?"],
    "anxious": ["? I'm a bit worried.", " soon?", "? It was a gift.", "? I'm running out of time."],
}
TONE_I = {
    "polite": ["Please", "Kindly", "I'd be grateful if you could"],
    "frustrated": ["Please", "I need you to", "I expect you to", "Just"],
    "brief": ["Please", "Pls"],
    "detailed": ["I'd be grateful if you could", "Please", "I'd appreciate it if you could"],
    "anxious": ["Please", "I really need you to"],
}
TONE_I_END = {
    "polite": [".", " when you have a moment.", "."],
    "frustrated": [".", " today.", " soon.", ". I've waited long enough."],
    "brief": [".", ""],
    "detailed": [".", ". I kept everything in case it helps."],
    "anxious": [" soon.", ". I'm worried about this.", " as soon as possible."],
}
TONE_B = [
    " let me know my options", " tell me what happens next", " check what went wrong", " look into it",
    " help me sort this out", " advise on next steps", " get back to me", " point me in the right direction",
    " see what you can do", " explain what I should do",
]  # fmt: skip


def ask_line(rng: random.Random, tone: str) -> str:
    if rng.random() < 0.6:
        return compose(rng, TONE_Q, TONE_B, TONE_Q_END.get(tone, TONE_Q_END["polite"]))
    return compose(
        rng, TONE_I.get(tone, TONE_I["polite"]), TONE_B, TONE_I_END.get(tone, TONE_I_END["polite"])
    )


WANT_A = [
    "I'd like", "I would prefer", "Ideally I'd get", "I'm hoping for", "I think I should get",
    "What I'd want is", "I'd be happy with",
]  # fmt: skip
WANT_B = {
    "refund": [" a refund", " my money back", " a full refund", " the money returned"],
    "replacement": [" a replacement", " a new one", " a fresh one sent out", " a working one"],
    "exchange": [" an exchange", " the right one instead", " to swap it", " a different size"],
    "store_credit": [" store credit", " credit on my account", " account credit"],
    "loyalty_points": [" some points for the trouble", " a few reward points", " bonus points"],
    "free_shipping": [" free shipping next time", " the shipping waived next order"],
    "discount_code": [" a discount on my next order", " a coupon for the hassle", " a code for next time"],
    "cancellation": [" the order cancelled", " a cancellation", " it stopped before it ships"],
    "price_adjustment": [" the difference back", " the correct price charged", " the promo applied"],
    "repair": [" it repaired", " it fixed", " a repair"],
}
WANT_C = [".", " if possible.", ", please.", " if that works.", ".", " as soon as you can."]

DATE_SAYS = [
    "I ordered it on {order_date}.", "The order was from {order_date}.", "Bought it {order_date}.",
    "It's from my {order_date} order.", "Ordered {order_date}.", "I placed the order on {order_date}.",
    "Purchased on {order_date}.",
]  # fmt: skip
AGO_SAYS = ["I bought it {ago}.", "It arrived {ago}.", "I ordered it {ago}.", "This started {ago}."]
PRICE_SAYS = ["I paid ${price} for it.", "It cost ${price}.", "That was ${price}.", "(${price}, by the way.)"]


def ago(days: int) -> str:
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    if days < 14:
        return "last week"
    if days < 31:
        return f"about {days // 7} weeks ago"
    return "a while back"


PS_A = ["P.S.", "PS:", "PS -", "P.S. -"]
PS_B = [
    " You can reach me by phone too.", " My phone number is on the account.", " Please keep my loyalty status in mind.",
    " I've shopped with you for years.", " Email is the best way to reach me.", " I can send photos if needed.",
    " I'm away next week.", " A text is fine as well.",
]  # fmt: skip

# -- subjects -----------------------------------------------------------------------------------------------

SUBJECT_EXTRA = {
    "incorrect_item": ["Got someone else's item", "Wrong product in my box", "Mix-up with my {noun}",
                       "This isn't the {noun} I ordered", "Different item than ordered", "Sent the wrong {noun}"],
    "size_mismatch": ["{noun} runs small", "{noun} way too big", "Size chart is off for {product}",
                      "Fit issue with {product}", "Need to swap sizes", "{product} sizing"],
    "cancel_order": ["Cancel order please", "Stop my {noun} order", "Cancel button not working",
                     "Ordered by mistake", "Need to cancel {product}", "Cancellation request"],
    "warranty_claim": ["Claim ignored for {noun}", "Warranty help needed", "Guarantee claim on {product}",
                       "Still waiting on my claim", "{noun} broke, under warranty", "Warranty follow-up"],
    "shipping_delay": ["Where is my {noun}?", "Package late", "Delivery overdue", "Still no {product}",
                       "Tracking stuck", "Late delivery of {product}"],
    "loyalty_redemption": ["Points not applied", "Rewards missing", "My points vanished",
                           "Couldn't use my rewards", "Reward points on {noun} order", "Missing loyalty credit"],
    "return_confusion": ["How do I return this?", "Return question about {noun}", "Return label?",
                         "Can I still send back the {noun}?", "Returns confusing", "Return help: {product}"],
    "defective_product": ["{noun} fell apart", "Faulty {product}", "{product} broke already",
                          "Defect in my {noun}", "Poor quality {noun}", "Broken {noun}"],
    "promo_overcharge": ["Promo not applied", "Overcharged on {noun}", "Discount missing",
                         "Coupon didn't work", "Charged full price for {product}", "Sale price not honoured"],
    "checkout_failure": ["Payment keeps failing", "Can't check out", "Checkout error with {product}",
                         "Card declined at checkout", "Unable to buy the {noun}", "Site won't take my payment"],
    "damaged_in_transit": ["Box arrived crushed", "{noun} damaged in shipping", "Parcel damaged",
                           "Broken on arrival: {product}", "Damaged delivery", "{product} came damaged"],
    "missing_item": ["Missing item", "Part of my order missing", "{noun} not in the box",
                     "Where's my {noun}?", "Order incomplete", "Short shipment"],
}  # fmt: skip

# -- chats ---------------------------------------------------------------------------------------------------

CHAT_HEADERS = [
    "Chat started {start} UTC via {origin}",
    "Chat transcript, {origin}, {start} UTC",
    "{origin} session, {start} UTC",
    "Conversation started {start} UTC ({origin})",
]
CHAT_ORIGINS = ["Web Chat", "Mobile App Chat", "Help Center Chat", "Website chat", "App chat"]
CUST_HELLO = [
    "Hi",
    "Hello",
    "Hey",
    "Hi there",
    "Hello?",
    "Hey there",
    "Good morning",
    "Evening",
    "Hiya",
    "Hi!",
]
CUST_NEED = [
    ", I need help with an order", ", I have a problem with my order", ", quick question",
    ", something's wrong with my purchase", ", can someone help me", ", I'm having trouble with an item",
    ", I need some help", ", are you there?", ", got an issue with a delivery", "",
]  # fmt: skip
AGENT_HELLO = ["Hi {first}", "Hello {first}", "Hey {first}", "Thanks for reaching out, {first}",
               "Welcome, {first}", "Good to see you, {first}", "Hi there {first}", "Thanks for waiting, {first}"]  # fmt: skip
AGENT_NAME = [", this is {agent_first}", ", {agent_first} here", ", my name is {agent_first}", "",
              ", I'm {agent_first}", ", you're chatting with {agent_first}"]  # fmt: skip
AGENT_FROM = [" from {company}", "", "", " with {company} support", " on the support team"]
AGENT_OFFER_HELP = [". How can I help?", ". What can I do for you?", ". What's going on?", ". I'm happy to help.",
                    ". What seems to be the problem?", ". What happened?", "! How can I help you today?",
                    ". Tell me what's up.", ". What can I help with?"]  # fmt: skip
ASK_A = [
    "Could you", "Can you", "Would you", "Could you please", "Please could you", "Would you be able to",
    "Are you able to",
]  # fmt: skip
ASK_B = [
    " explain a bit more", " describe what happened", " confirm the order email", " share the order number",
    " send me a photo", " say when it started", " confirm your size", " check for the packaging",
    " say how often you've used it", " confirm the delivery address", " confirm the colour",
    " walk me through it", " say what you noticed first", " say where it was delivered",
    " say what you tried", " check the size label", " say roughly when it arrived",
    " describe it in a few words", " say how it was stored",
]  # fmt: skip
ASK_C = ["?", " for me?", " please?", ", if you can?", " quickly?"]
CUST_PREFIX = ["Sure. ", "Yes. ", "OK so ", "Well, ", "Right, ", "", "", "Yeah, ", "Sure thing. ", "Um, "]
CUST_SHORT = [
    "It's the email on my account.", "Yes, I still have the box.", "I noticed it right away.",
    "It's the first time.", "I only used it twice.", "Sure, I can send photos later.", "No, I threw the box away.",
    "I ordered my usual size.", "It came in the original packaging.", "About a week ago.",
]  # fmt: skip
AGENT_CHECK_A = ["Let me", "Give me a moment to", "One sec, I'll", "Thanks, I'll", "OK, let me", "Bear with me while I",
                 "Got it. I'll", "Thanks for that. Let me", "Understood, I'll", "Right, I'll", "Noted. Let me",
                 "Thanks. Give me a minute to", "Sure, I'll", "Perfect, let me"]  # fmt: skip
AGENT_CHECK_B = [" pull up your order.", " look at your account.", " check the order details.", " review the order.",
                 " check what happened.", " look into this.", " see what went on here.", " check with the system.",
                 " open your case.", " check the shipment.", " find the order.", " go through the details."]  # fmt: skip
AGENT_FOLLOW = [
    "I've passed the details to the team that handles this, and they'll follow up by email.",
    "I've noted everything on your case; a colleague will follow up by email shortly.",
    "I've logged this on your case and we'll email you the next steps.",
    "I've escalated this internally; expect an email within a day or two.",
    "This needs a specialist, so I've handed it over and you'll hear from them by email.",
    "I've added all of this to your case and flagged it for follow-up.",
]
CUST_END_A = ["Thanks", "Thank you", "OK, thank you", "Perfect, thanks", "Alright, thanks", "Cool, thanks",
              "Got it, thanks", "Great, thanks", "Thanks again"]  # fmt: skip
CUST_END_B = [
    "",
    " a lot",
    " for the help",
    " so much",
    ", appreciate it",
    " for sorting it",
    " for your time",
]
CUST_END_ALONE = ["Great!", "Awesome.", "OK, sounds good.", "Perfect.", "That works.", "Brilliant, cheers."]
AGENT_END_A = ["You're welcome", "Happy to help", "No problem", "My pleasure", "Glad I could help", "Anytime",
               "Thanks for chatting with us", "Of course"]  # fmt: skip
AGENT_END_B = ["! Have a great day.", ". Anything else I can help with?", ". Take care!", ". Enjoy the rest of your day.",
               "!", ". Have a good one.", ". Bye for now.", ". Take care, {first}.", ", {first}.", ". All the best.",
               ". Have a lovely evening.", ". Speak soon.", ". Enjoy the weekend!", ". Cheers!"]  # fmt: skip

# -- emails --------------------------------------------------------------------------------------------------

EMAIL_CLOSE_A = [
    "I'll close this case now", "I'm marking this case as resolved", "This case is now closed",
    "I'm closing your case", "We'll consider this resolved", "Your case is resolved",
    "I've set this case to closed",
]  # fmt: skip
EMAIL_CLOSE_B = [
    ", but feel free to reply if anything else comes up.", ". Thanks for your patience.", ". We appreciate your business.",
    "; just reply here if you need us again.", ". Reply any time if something's not right.", ".",
    ". Thanks for shopping with us.", ", and you can reopen it by replying to this email.",
    ", but write back any time.", "; a reply reopens it.", ". If anything changes, just answer this email.",
    ". We're only a reply away.", ", though you can always write back.", ". Write back if it's still not right.",
    ". Thanks again for bearing with us.", ". Enjoy your order!",
]  # fmt: skip
# Every agent email is signed with the agent's full name (the writers' checks require it).
EMAIL_SIGNATURES = [
    "{agent}\n{company} Support", "{agent}\n{company} Customer Care", "{agent}", "{agent}\nCustomer Support",
    "{agent}\nSupport Team", "{agent}, {company}", "{agent}\n{company}", "{agent} | Customer Care",
]  # fmt: skip

# More ways customers describe each issue ({product}, {noun} as in `vocab.ISSUE_PROBLEMS`).
PROBLEMS_MORE: dict[str, list[str]] = {
    "incorrect_item": [
        "Opened my parcel and found a pair of kids' sandals instead of the {product}.",
        "You sent me the wrong thing: I bought the {product} and got something I never ordered.",
        "The {noun} in the bag isn't mine; wrong model, wrong colour, wrong everything.",
        "Whatever arrived, it isn't the {product}.",
    ],
    "size_mismatch": [
        "The {product} came up huge on me even though I picked my normal size.",
        "Can't get my feet into the {product}, even in my usual size.",
        "The {noun} pinches everywhere and the sleeves are short.",
        "Tried on the {product} last night and it's clearly mislabelled.",
    ],
    "cancel_order": [
        "I changed my mind about the {product} minutes after paying and there's no cancel option.",
        "Accidentally ordered the {product} twice and need one of them stopped.",
        "The site won't let me cancel the {noun} even though it hasn't shipped.",
        "Support chat told me the {product} was cancelled, but I got a dispatch email anyway.",
    ],
    "warranty_claim": [
        "Sent my claim for the {product} last month and the status still says pending.",
        "The {noun} broke inside the warranty period and the claim page just errors out.",
        "I've emailed twice about my guarantee claim on the {product} without a reply.",
        "Your claims team asked for photos of the {product}, I sent them, and then silence.",
    ],
    "shipping_delay": [
        "The {product} was due days ago and the tracking hasn't changed since it left the warehouse.",
        "Still waiting on the {noun}; the carrier says it's at a depot but nothing moves.",
        "My delivery window for the {product} came and went.",
        "Tracking for the {product} has said 'in transit' for over a week.",
    ],
    "loyalty_redemption": [
        "My points didn't come off when I bought the {product}, but my balance went down anyway.",
        "Tried to use my rewards on the {noun} and checkout just ignored them.",
        "The points from my {product} order never showed up in my account.",
        "My member discount vanished at the last step of buying the {product}.",
    ],
    "return_confusion": [
        "I want to send back the {product} but the returns page keeps looping me back to the start.",
        "No idea whether the {noun} can still be returned after I tried it on outside.",
        "There was no return slip with the {product} and I can't find one online.",
        "The instructions for returning the {product} contradict each other.",
    ],
    "defective_product": [
        "The sole on the {product} started peeling off after a handful of wears.",
        "Stitching on the {noun} unravelled the first time I used it.",
        "The {product} arrived with a crack I didn't notice until I unpacked it properly.",
        "My {noun} stopped doing its job after barely a month.",
    ],
    "promo_overcharge": [
        "The {product} was advertised on sale but I was charged the full amount.",
        "My discount code was accepted at checkout, yet the receipt for the {noun} shows no discount.",
        "I was billed more for the {product} than the promo price on your banner.",
        "The sale price disappeared from the {product} when I paid.",
    ],
    "checkout_failure": [
        "Every time I try to pay for the {product}, the page freezes and then times out.",
        "My card was refused on your site for the {noun}, though it works everywhere else.",
        "Got an error code at the payment step when buying the {product}.",
        "The basket empties itself right when I try to check out with the {product}.",
    ],
    "damaged_in_transit": [
        "The {product} came in a box that looked like it had been run over.",
        "Carrier left the {noun} on my porch soaked and the packaging torn open.",
        "Half of the {product} was crushed when I opened the parcel.",
        "The {noun} was scratched and bent out of the box.",
    ],
    "missing_item": [
        "The {product} wasn't in the parcel even though the invoice lists it.",
        "Everything arrived except the {noun}.",
        "Got the rest of my order, but no {product}.",
        "Unpacked everything twice: the {product} simply isn't there.",
    ],
}

DETAILS_MORE: dict[str, list[str]] = {
    "incorrect_item": ["The barcode on the tag doesn't match my order.", "It's not even the same brand line.",
                       "My confirmation clearly shows the {colour} one."],
    "size_mismatch": ["My other pairs from you in {size} fit fine.", "I measured twice before ordering.",
                      "It's tight across the {part}."],
    "cancel_order": ["I tried both the app and the website.", "It's been less than an hour since I ordered.",
                     "The order page still says processing."],
    "warranty_claim": ["The claim reference is in my inbox.", "I attached {count} photos to the form.",
                       "The {part} split under normal use."],
    "shipping_delay": ["The last scan was {days} days ago.", "I needed it for a trip this weekend.",
                       "Nobody came by; no card was left either."],
    "loyalty_redemption": ["I had about {points} points before the order.", "The app shows a different balance than the site.",
                           "I'm a long-time member."],
    "return_confusion": ["The tags are still attached.", "I only tried it on indoors.",
                         "The portal asks for a code I never received."],
    "defective_product": ["I've used it maybe {uses} times.", "The {part} is where it gave out.",
                          "I followed the care label exactly."],
    "promo_overcharge": ["The code was {percent}% off.", "I have a screenshot of the sale price.",
                         "My bank statement shows the full charge."],
    "checkout_failure": ["I tried {tries} times.", "I switched browsers and it still failed.",
                         "My bank says they never saw the attempt."],
    "damaged_in_transit": ["I took photos before unpacking.", "The {part} is bent out of shape.",
                           "The outer box was wet."],
    "missing_item": ["The box was taped shut properly.", "The packing slip lists {count} items.",
                     "Nothing else arrived separately."],
}  # fmt: skip

SUBJECT_TAILS = [
    " ({noun})",
    " - {product}",
    " with my {noun}",
    ": {product}",
    " - order for {noun}",
    " re {product}",
]

# Naming the product when the problem sentence only says "the {noun}".
PRODUCT_SAYS = [
    "It's the {product}.", "(The {product}, to be exact.)", "This is the {product}.", "Product: {product}.",
    "I mean the {product}.", "The item is the {product}.",
]  # fmt: skip

# More ways an agent words an offer; each names the remedy's canonical phrase (how offers are detected).
OFFER_MORE: dict[str, list[str]] = {
    "refund": ["You're getting a full refund for the {product}.", "A full refund is on its way to your card.",
               "I've approved a full refund; expect it in a few days.",
               "I've put through a full refund today.",
               "A full refund is approved for the {product}.",
               "You'll receive a full refund to the card you paid with."],
    "replacement": ["A free replacement {noun} is being packed for you now.", "I've ordered you a free replacement.",
                    "You'll get a free replacement, shipped today.",
                    "A free replacement is on its way to you.",
                    "Good news: a free replacement {noun} ships tomorrow.",
                    "I've arranged a free replacement for the {product}."],
    "exchange": ["Let's do a free exchange for the right {noun}.", "I've opened a free exchange for you.",
                 "A free exchange is set up; the label is attached to your case.",
                 "A free exchange is ready for you.",
                 "I can arrange a free exchange for another {noun}.",
                 "You're set for a free exchange on the {product}."],
    "store_credit": ["You now have store credit on your account, good for {valid_days} days.",
                     "I've put store credit on your profile (valid {valid_days} days).",
                     "There is now store credit on file for you; it lasts {valid_days} days.",
                     "I've issued store credit, usable for {valid_days} days.",
                     "Your account now holds store credit ({valid_days} days).",
                     "Here is store credit for the {product}, valid {valid_days} days.",
                     "There's store credit on your account now; spend it within {valid_days} days.",
                     "I've added store credit for the {product}. It expires in {valid_days} days.",
                     "You have store credit waiting, good for the next {valid_days} days.",
                     "Some store credit has gone onto your account and stays valid {valid_days} days.",
                     "I can confirm store credit is set up for you ({valid_days}-day expiry)."],
    "loyalty_points": ["{amount} loyalty points are now in your account.", "I've topped up your loyalty points by {amount}.",
                       "You'll see {amount} extra loyalty points on your balance.",
                       "I've added {amount} loyalty points as an apology.",
                       "Your account now has {amount} more loyalty points.",
                       "As a thank-you for your patience: {amount} loyalty points."],
    "free_shipping": ["You'll find a free shipping voucher in your account ({valid_days} days).",
                      "I've issued you a free shipping voucher for {valid_days} days.",
                      "A free shipping voucher is yours for the next {valid_days} days.",
                      "Your next delivery is covered by a free shipping voucher ({valid_days} days).",
                      "A free shipping voucher is in your wallet for {valid_days} days.",
                      "I've added a free shipping voucher; it lasts {valid_days} days."],
    "discount_code": ["Your discount code is {code}: {percent}% off, valid {valid_days} days.",
                      "Use discount code {code} for {percent}% off in the next {valid_days} days.",
                      "I've sent you a discount code ({code}) worth {percent}% off for {valid_days} days.",
                      "Try discount code {code}: {percent}% off for {valid_days} days.",
                      "Here's a discount code, {code}, for {percent}% off ({valid_days} days).",
                      "A discount code for {percent}% off: {code}. It lasts {valid_days} days."],
    "cancellation": ["The order cancellation is confirmed.", "I've completed the order cancellation for you.",
                     "Your order cancellation for the {product} is done.",
                     "Your order cancellation is complete.",
                     "The order cancellation for the {product} went through.",
                     "I've confirmed the order cancellation; nothing will be charged."],
    "price_adjustment": ["I've made a price adjustment for the {product}.", "A price adjustment is now on your order.",
                         "You'll get a price adjustment back on your card.",
                         "A price adjustment for the {product} is done.",
                         "I've put through a price adjustment on your order.",
                         "You're getting a price adjustment for the difference."],
    "repair": ["We'll arrange a free repair for the {product}.", "I've booked a free repair; the label is in your email.",
               "Your {noun} is eligible for a free repair.",
               "A free repair is booked for the {product}.",
               "We can do a free repair on your {noun}.",
               "I've set up a free repair; a label is on its way."],
}  # fmt: skip
OFFER_PRE = [
    "",
    "",
    "Good news: ",
    "Thanks for waiting. ",
    "OK. ",
    "Right, ",
    "Thanks for your patience. ",
    "So, ",
]
OFFER_POST = ["", "", " Does that work?", " Hope that helps.", " Sorry again.", " Anything else?", " Is that OK?",
              " All set.", " Sorry for the hassle.", " Let me know."]  # fmt: skip

# An agent's email asking for one detail.
EMAIL_ASK_A = [
    "Could you", "Would you", "Can you", "When you have a moment, could you", "To move this forward, could you",
    "So I can finish this, could you", "Before I go further, could you",
]  # fmt: skip
EMAIL_ASK_B = [
    " confirm your shipping address", " send a photo of the item", " confirm the order date",
    " reply with the order number", " send a photo of the label", " tell me which size you ordered",
    " confirm the email on the account", " describe what happened in a line or two",
    " tell me roughly when it arrived", " send the tracking number if you have it", " confirm the colour you chose",
    " tell me what you've tried so far", " attach a picture of the packaging", " let me know the size on the label",
]  # fmt: skip
EMAIL_ASK_C = ["?", " for me?", " by replying to this email?", " when you can?"]
