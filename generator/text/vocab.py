"""Vocabulary of the offline writer: data tables only, no logic."""

from __future__ import annotations

# 60 product-name modifiers: a product is "<modifier> <noun>" and (noun, modifier) pairs are unique.
MODIFIERS = [
    "Aero",
    "Flex",
    "Pro",
    "Summit",
    "Velocity",
    "Cloud",
    "Stride",
    "Apex",
    "Nimbus",
    "Terra",
    "Pulse",
    "Zephyr",
    "Vortex",
    "Ridge",
    "Glide",
    "Core",
    "Swift",
    "Atlas",
    "Nova",
    "Ember",
    "Tempo",
    "Drift",
    "Quantum",
    "Breeze",
    "Canyon",
    "Horizon",
    "Pace",
    "Peak",
    "Element",
    "Fusion",
    "Trek",
    "Sprint",
    "Orbit",
    "Vista",
    "Comet",
    "Boulder",
    "Coastal",
    "Alpine",
    "Urban",
    "Rally",
    "Momentum",
    "Kinetic",
    "Cascade",
    "Solstice",
    "Mesa",
    "Tundra",
    "Pacer",
    "Vector",
    "Lumen",
    "Crest",
    "Harbor",
    "Sierra",
    "Echo",
    "Blaze",
    "Frost",
    "Meridian",
    "Evolve",
    "Marathon",
    "Nomad",
    "Catalyst",
]

ISSUE_NAMES = {
    "incorrect_item": "Incorrect item received",
    "size_mismatch": "Size mismatch",
    "cancel_order": "Unable to cancel order",
    "warranty_claim": "Warranty claim trouble",
    "shipping_delay": "Shipping delay",
    "loyalty_redemption": "Loyalty points not redeemed",
    "return_confusion": "Return policy confusion",
    "defective_product": "Defective product",
    "promo_overcharge": "Overcharged despite promo code",
    "checkout_failure": "Unable to complete purchase",
    "damaged_in_transit": "Package damaged in transit",
    "missing_item": "Item missing from order",
}

ISSUE_DESCRIPTIONS = {
    "incorrect_item": "The customer received a different product, model or colour than the one ordered.",
    "size_mismatch": "The item does not fit as the size chart suggested and the customer needs another size.",
    "cancel_order": "The customer tried to cancel an order and could not, or the cancellation did not go through.",
    "warranty_claim": "The customer has trouble filing or getting a response to a warranty claim.",
    "shipping_delay": "The order has not arrived by the promised delivery date.",
    "loyalty_redemption": "Loyalty points were not applied, not credited or could not be redeemed at checkout.",
    "return_confusion": "The customer is unsure whether or how an item can be returned.",
    "defective_product": "The product arrived faulty or failed during normal use.",
    "promo_overcharge": "A promotional code or sale price was not applied and the customer was charged too much.",
    "checkout_failure": "The customer could not complete a purchase because checkout or payment failed.",
    "damaged_in_transit": "The package or the product inside it was damaged during delivery.",
    "missing_item": "One or more items of the order were missing from the package.",
}

# What the customer says happened, per issue ({product} is the product's name).
ISSUE_PROBLEMS = {
    "incorrect_item": [
        "I ordered the {product} but the box contained a completely different item.",
        "The package arrived today, but instead of the {product} I got a different model.",
        "I received the {product} in the wrong colour, not the one shown on my order confirmation.",
        "What came in the mail is not the {product} I paid for; it looks like someone else's order.",
        "The label on the box says {product}, but what's inside is a different product altogether.",
    ],
    "size_mismatch": [
        "The {product} I received runs a full size smaller than the size chart says.",
        "I followed the size guide for the {product}, yet it is far too tight to wear.",
        "The {product} is labelled with my usual size but fits like two sizes up.",
        "Sizing on the {product} is way off.",
        "I need a different size of the {product}; the one I got doesn't fit at all.",
    ],
    "cancel_order": [
        "I tried to cancel my order for the {product} within minutes of placing it, but the button did nothing.",
        "I placed an order for the {product} by mistake and can't find a way to cancel it.",
        "My cancellation request for the {product} was never confirmed and now the order shows as processing.",
        "I asked to cancel the {product} right after ordering, yet I was still charged.",
    ],
    "warranty_claim": [
        "I submitted a warranty claim for my {product} weeks ago and have heard nothing back.",
        "The warranty form keeps rejecting my claim for the {product} even though it's within the warranty period.",
        "My {product} failed after a few months and I can't figure out how to file a warranty claim.",
        "Nobody has responded to the photos I sent for the warranty claim on my {product}.",
    ],
    "shipping_delay": [
        "My {product} was supposed to arrive last week and the tracking hasn't updated since.",
        "The delivery date for the {product} has passed and there is still no sign of the package.",
        "Tracking for my {product} has said 'in transit' for over a week now.",
        "I ordered the {product} with plenty of time before my race and it still hasn't shipped.",
        "The {product} I ordered is long overdue and I need it for an event this weekend.",
    ],
    "loyalty_redemption": [
        "I tried to use my loyalty points on the {product}, but they weren't applied at checkout.",
        "The points I should have earned from buying the {product} never showed up in my account.",
        "My points balance dropped after I bought the {product}, but the discount never appeared.",
        "Checkout wouldn't let me redeem my points for the {product} even though I have plenty.",
    ],
    "return_confusion": [
        "I'm not sure whether I can still return the {product}, and the website is unclear.",
        "The return instructions I got with the {product} contradict what the website says.",
        "Can I return the {product} if I've only tried it on indoors? The policy page is confusing.",
        "I started a return for the {product} online but the portal says it isn't eligible.",
    ],
    "defective_product": [
        "The sole of my {product} started peeling off after only a couple of runs.",
        "The zipper on the {product} broke the first time I used it.",
        "My {product} arrived with a seam coming apart right out of the box.",
        "The {product} stopped working properly after a week of normal use.",
        "There's a defect in the stitching of the {product} that gets worse every time I use it.",
    ],
    "promo_overcharge": [
        "I entered a valid promo code when buying the {product}, but I was charged full price.",
        "The sale price on the {product} wasn't applied and my card was charged the regular amount.",
        "My promotional discount disappeared at the last step of checkout for the {product}.",
        "I was overcharged for the {product}; the promotion clearly said it was on sale.",
    ],
    "checkout_failure": [
        "Every time I try to buy the {product}, checkout fails with a payment error.",
        "The site keeps logging me out at the payment step when I try to order the {product}.",
        "I can't complete my purchase of the {product}; the order button just spins forever.",
        "My card was declined for the {product} even though my bank says nothing is wrong.",
    ],
    "damaged_in_transit": [
        "The box with my {product} arrived crushed and the item inside is damaged.",
        "My {product} came with a large tear, and the package was clearly mishandled in transit.",
        "The {product} was delivered soaking wet with the packaging ripped open.",
        "The carrier dropped off my {product} in a badly dented box and the product is scratched.",
    ],
    "missing_item": [
        "My order arrived but the {product} wasn't in the box.",
        "The packing slip lists the {product}, but it's missing from the package.",
        "I only received part of my order; the {product} is nowhere to be found.",
        "Everything arrived except the {product}, even though I was charged for it.",
    ],
}

SUBJECTS = {
    "incorrect_item": [
        "Wrong item received: {product}",
        "Received the wrong {noun}",
        "{product} order mix-up",
        "Not what I ordered ({product})",
    ],
    "size_mismatch": [
        "{product} doesn't fit",
        "Size problem with my {noun}",
        "Wrong size: {product}",
        "Need a different size of the {product}",
    ],
    "cancel_order": [
        "Can't cancel my {product} order",
        "Cancellation not processed",
        "Please cancel the {product}",
        "Order cancellation failed",
    ],
    "warranty_claim": [
        "Warranty claim for {product}",
        "No response on my warranty claim",
        "{product} warranty issue",
        "Help with a warranty claim",
    ],
    "shipping_delay": [
        "Where is my {product}?",
        "{product} delivery is late",
        "Shipping delay on my order",
        "Package hasn't arrived",
    ],
    "loyalty_redemption": [
        "Loyalty points not applied",
        "Points missing after buying {product}",
        "Can't redeem my points",
        "Rewards issue with {product} order",
    ],
    "return_confusion": [
        "Question about returning the {product}",
        "Is my {noun} returnable?",
        "Return policy question",
        "Return portal won't accept {product}",
    ],
    "defective_product": [
        "Defective {product}",
        "{product} fell apart",
        "Faulty {noun}",
        "Quality problem with {product}",
    ],
    "promo_overcharge": [
        "Promo code not applied to {product}",
        "Overcharged on my order",
        "Discount missing for {product}",
        "Charged full price despite sale",
    ],
    "checkout_failure": [
        "Can't check out",
        "Payment keeps failing for {product}",
        "Unable to buy the {product}",
        "Checkout error",
    ],
    "damaged_in_transit": [
        "{product} arrived damaged",
        "Damaged package",
        "Shipping damage on my {noun}",
        "Crushed box, damaged {product}",
    ],
    "missing_item": [
        "{product} missing from my order",
        "Incomplete order",
        "Item missing: {product}",
        "Where is the {product} from my package?",
    ],
}

OPENERS = {
    "polite": ["Hello,", "Hi there,", "Good morning,", "Hello support team,", "Hi,"],
    "frustrated": ["Hello,", "Hi,", "To whom it may concern,", "Support,"],
    "brief": ["Hi,", "Hello,", ""],
    "detailed": ["Hello,", "Hi team,", "Dear customer service,"],
    "anxious": ["Hi,", "Hello, I hope you can help,", "Hi there,"],
}

CONTEXT = [
    "I placed the order on {order_date}.",
    "My order went through on {order_date}.",
    "I bought it on {order_date}.",
    "The purchase was made on {order_date}.",
    "This is about the order I placed on {order_date}.",
]

TONE_LINES = {
    "polite": [
        "I'd really appreciate your help sorting this out.",
        "Thank you in advance for looking into it.",
        "Could you please let me know what my options are?",
        "Any help would be much appreciated.",
    ],
    "frustrated": [
        "This is really disappointing and I expected better.",
        "I've been a customer for years and this is frustrating.",
        "Please fix this quickly; I've already wasted enough time.",
        "Honestly I'm pretty annoyed about this.",
    ],
    "brief": ["Please advise.", "What can you do?", "Let me know.", "Thanks."],
    "detailed": [
        "I've attached photos and kept all the original packaging in case you need it.",
        "I checked my account, my email and the tracking page before writing to you.",
        "I've double-checked the order confirmation and everything on my side looks correct.",
        "For reference, I usually order this size from you and never had a problem before.",
    ],
    "anxious": [
        "I need this sorted soon and I'm worried about missing out.",
        "I'm a bit worried because this was a gift.",
        "Could you get back to me as soon as possible?",
        "I'm nervous the window to fix this will close.",
    ],
}

WANTS = {
    "refund": ["I'd like my money back.", "I'd prefer a refund if possible."],
    "replacement": ["Can you send me a new one?", "I'd like a replacement."],
    "exchange": ["I'd like to swap it for the right one.", "Can I exchange it?"],
    "store_credit": ["Store credit would be fine.", "I'm open to credit on my account."],
    "loyalty_points": [
        "Some points for the trouble would be nice.",
        "Maybe some rewards points to make up for it?",
    ],
    "free_shipping": ["Free shipping next time would help.", "Could you waive shipping on my next order?"],
    "discount_code": ["A discount on my next order would help.", "Could I get a coupon for the hassle?"],
    "cancellation": ["Please just cancel it.", "I want the order cancelled."],
    "price_adjustment": ["Please charge me the correct price.", "I want the difference back."],
    "repair": ["Can it be repaired?", "I'd be happy to have it fixed."],
}

SIGNOFFS = ["Thanks,", "Best,", "Regards,", "Thank you,", "Cheers,", "Best regards,"]

AGENT_GREETING = [
    "Hi {first},",
    "Hello {first},",
    "Dear {first},",
    "Hi {first}, thanks for getting in touch.",
    "Hello {first}, thank you for contacting {company}.",
]

AGENT_ACK = [
    "Thanks for reaching out about your {product}. I'm {agent} and I'll be looking after your case.",
    "I'm sorry to hear about the trouble with your {product}. My name is {agent} and I'm on it.",
    "Thank you for the details about your {product}. I'm {agent} from the {company} support team.",
    "I've received your message about the {product} and I'm reviewing your order now. I'm {agent}.",
    "Sorry for the hassle with the {product}. I'm {agent}, and I'll make sure we get this resolved.",
    "Sorry your {product} has given you trouble. {agent} here; I'll take it from here.",
    "That sounds frustrating, and thanks for telling us about the {product}. I'm {agent} and this case is mine now.",
    "Thanks for your patience while your message about the {product} waited in our queue. I'm {agent}.",
    "I've read through your note about the {product}. I'm {agent}, and I'll see this through with you.",
]

AGENT_ASK = [
    "Could you confirm the order date and send a photo of the item?",
    "Could you tell me a bit more about what happened, and share a picture if you can?",
    "To move forward I just need you to confirm your shipping address.",
    "Can you confirm the size and colour you ordered?",
    "Would you mind sending a photo of the packing slip?",
]

CUSTOMER_REPLY = [
    "Thanks for the quick reply. I've attached the photos you asked for.",
    "Sure, the order date is on my confirmation email and I've attached a picture.",
    "Here is the information you requested. Let me know if you need anything else.",
    "Thanks {agent_first}. The address is correct, and I've added a photo.",
    "Appreciate it. Attached are the pictures of the {noun}.",
    "OK, thanks. Any update on this?",
    "Just following up on my case, is there any news?",
]

AGENT_TRANSFER = [
    "I'm transferring your case to my colleague {next_agent}, who handles {issue_lower} cases and can help you further.",
    "To get you the best help, I'm handing your case over to {next_agent} on our {issue_lower} team.",
    "I've asked {next_agent} to take over, as they specialise in {issue_lower} issues.",
    "I'm passing this case to {next_agent}, who will follow up with you shortly.",
]

AGENT_TAKEOVER = [
    "I'm {agent} and I've taken over your case from {prev_agent}. I've read through the history.",
    "My colleague {prev_agent} passed your case to me. I'm {agent} and I'll see it through.",
    "I'm {agent}; I'm now handling your case about the {product}.",
]

AGENT_OFFER = {
    "refund": [
        "I've arranged a full refund for the {product}; it will reach your original payment method in 5-7 business days.",
        "We'll give you a full refund for the {product}. You'll see it on your statement within a week.",
    ],
    "replacement": [
        "I'm sending you a free replacement {noun}; it ships within two business days.",
        "We'll ship a free replacement of the {product} right away at no cost to you.",
    ],
    "exchange": [
        "I've set up a free exchange: send the {product} back with the prepaid label and we'll ship the right one.",
        "We can do a free exchange for the correct {noun}; the return label is in your inbox.",
    ],
    "store_credit": [
        "I've added store credit for the full amount to your account; it is valid for {valid_days} days.",
        "As a resolution, I've issued store credit to your account, usable for {valid_days} days.",
    ],
    "loyalty_points": [
        "I've credited {amount} loyalty points to your account for the inconvenience.",
        "To make up for this, I've added {amount} loyalty points to your rewards balance.",
    ],
    "free_shipping": [
        "I've added a free shipping voucher to your account, valid for {valid_days} days.",
        "Your next order ships on us: I've issued a free shipping voucher valid for {valid_days} days.",
    ],
    "discount_code": [
        "Here is a discount code for {percent}% off your next order, valid for {valid_days} days: {code}.",
        "I'd like to offer you a discount code, {code}, good for {percent}% off within {valid_days} days.",
    ],
    "cancellation": [
        "I've processed an order cancellation for the {product}; you won't be charged.",
        "Done: the order cancellation went through, and the pending charge will drop off.",
    ],
    "price_adjustment": [
        "I've applied a price adjustment so you pay the promotional price for the {product}.",
        "We've made a price adjustment on the {product}; the difference goes back to your card.",
    ],
    "repair": [
        "We'll do a free repair of your {product}; I've emailed you a prepaid shipping label.",
        "Your {product} qualifies for a free repair at our service centre.",
    ],
}

AGENT_NO_REMEDY = [
    "I've reviewed your order and, under our policy, the resolution window for this kind of issue has already passed, so I'm not able to do more on this order.",
    "Unfortunately, your purchase falls outside the period our policy allows for this issue, so I can't provide a resolution beyond the troubleshooting tips above.",
    "I checked the policy for this issue and your order date is past the eligible window, so I'm unable to offer anything further on this purchase.",
]

AGENT_CLOSE = [
    "I'll close this case now, but feel free to reply if anything else comes up.",
    "I'm marking your case as resolved. Thanks for your patience.",
    "Your case is now closed. We appreciate your business.",
    "Glad we could sort this out. I'm closing the case; just reply here if you need us again.",
]

AGENT_SIGN = ["Best regards,", "Kind regards,", "Thanks,", "Warm regards,", "All the best,"]

CUSTOMER_THANKS = [
    "That works for me, thank you!",
    "Great, thanks for sorting it out.",
    "Perfect, appreciate the help.",
    "Thanks, that's all I needed.",
    "OK, thank you for your help.",
]

CHAT_CUSTOMER_OPEN = [
    "Hi, I need help with my order.",
    "Hello? I have a problem with something I bought.",
    "Hi there, quick question about my order.",
    "Hey, I'm having an issue with the {product}.",
]

CHAT_AGENT_OPEN = [
    "Hi {first}, this is {agent} from {company}. How can I help today?",
    "Welcome to {company} chat, I'm {agent}. What can I do for you?",
    "Hello {first}! {agent} here. What seems to be the problem?",
]

CHAT_AGENT_CHECK = [
    "Let me pull up your order, one moment please.",
    "Thanks, I'm checking your order now.",
    "Got it. Give me a second to look at the details.",
    "Understood, I'm reviewing your account.",
]

CHAT_CUSTOMER_END = [
    "Thanks, that's great.",
    "OK, thank you.",
    "Perfect, thanks a lot!",
    "Alright, thanks for the help.",
]

CHAT_AGENT_END = [
    "You're welcome! Anything else I can help with?",
    "Happy to help. Have a great day!",
    "Thanks for chatting with us. Take care!",
]

PRODUCT_FEATURES = {
    "Running Shoes": [
        "a responsive foam midsole",
        "a breathable engineered mesh upper",
        "a grippy rubber outsole",
        "a snug heel counter",
        "reflective details for early runs",
    ],
    "Training Shoes": [
        "a stable flat base for lifts",
        "lateral support for quick cuts",
        "a durable toe wrap",
        "a cushioned yet firm midsole",
        "a grippy multi-surface outsole",
    ],
    "Hiking & Trail": [
        "a waterproof membrane",
        "aggressive lugs for loose terrain",
        "a protective rock plate",
        "a reinforced toe cap",
        "a supportive ankle collar",
    ],
    "Lifestyle Sneakers": [
        "a classic low-profile silhouette",
        "a soft cushioned insole",
        "premium stitched overlays",
        "a vulcanised rubber sole",
        "an easy everyday fit",
    ],
    "Athletic Tops": [
        "sweat-wicking fabric",
        "flatlock seams that prevent chafing",
        "four-way stretch",
        "a lightweight breathable knit",
        "anti-odour treatment",
    ],
    "Athletic Bottoms": [
        "a secure drawcord waistband",
        "a zippered back pocket",
        "squat-proof fabric",
        "a gusseted crotch for mobility",
        "quick-dry material",
    ],
    "Outerwear": [
        "a water-resistant shell",
        "a packable design",
        "a soft brushed lining",
        "a storm hood",
        "sealed seams",
    ],
    "Swimwear": [
        "chlorine-resistant fabric",
        "a streamlined fit",
        "UPF 50 sun protection",
        "quick-dry material",
        "a secure drawstring",
    ],
    "Yoga & Studio": [
        "a non-slip surface",
        "eco-friendly materials",
        "extra cushioning for joints",
        "a lightweight carry strap",
        "a soft brushed finish",
    ],
    "Cycling": [
        "a padded chamois",
        "reflective accents",
        "a wind-blocking front panel",
        "silicone leg grippers",
        "a race-fit cut",
    ],
    "Socks & Accessories": [
        "moisture-wicking yarn",
        "arch compression",
        "a seamless toe",
        "an adjustable fit",
        "a lightweight design",
    ],
    "Bags & Equipment": [
        "a padded laptop sleeve",
        "a separate shoe compartment",
        "water-resistant fabric",
        "durable reinforced handles",
        "a compact foldable design",
    ],
}

PRODUCT_USES = [
    "daily training",
    "long weekend sessions",
    "race day",
    "the gym",
    "the trail",
    "studio classes",
    "commuting",
    "recovery days",
    "travel",
    "all-weather workouts",
]

CATEGORY_BLURBS = [
    "{name} from {company}: gear built for {use}.",
    "Our {lower} range, designed for {use} and tested by athletes.",
    "Everything in {lower}, from everyday essentials to performance picks for {use}.",
]

# One sentence per allowed remedy of a policy article (each states the phrase and its window in one sentence,
# as `schemas.textrules.states_window` reads it); few fixed words between the slots, so no 8-word run is
# shared by many articles.
REMEDY_RULES = [
    "Agents may offer {a_phrase} within {window} of purchase.",
    "{A_phrase}: allowed within {window} of buying.",
    "Eligible resolution: {phrase}, up to {window} after ordering.",
    "The window for {a_phrase} is {window} from the order date.",
    "Customers may receive {a_phrase} up to {window} after buying.",
    "{A_phrase} can still be offered up to {window} after purchase.",
    "Customers qualify for {a_phrase} during the first {window} after purchase.",
    "For {a_phrase}, the limit is {window} since the purchase.",
]

# -- richer case descriptions ---------------------------------------------------------------------------

SIZES = [
    "size 7",
    "size 8",
    "size 8.5",
    "size 9",
    "size 9.5",
    "size 10",
    "size 10.5",
    "size 11",
    "size 12",
    "an XS",
    "a small",
    "a medium",
    "a large",
    "an XL",
    "an XXL",
]
COLOURS = [
    "black",
    "navy",
    "charcoal",
    "white",
    "red",
    "olive",
    "teal",
    "coral",
    "grey",
    "sand",
    "royal blue",
    "forest green",
    "burgundy",
    "lavender",
    "orange",
]

ISSUE_DETAILS = {
    "incorrect_item": [
        "I ordered it in {colour} and got {colour2} instead.",
        "The item I got is {size2}, while I clearly ordered {size}.",
        "The style code on the tag doesn't match anything on my order.",
        "It even came with someone else's packing slip inside.",
        "The box was sealed, so the mix-up must have happened at the warehouse.",
    ],
    "size_mismatch": [
        "I normally wear {size} and that's what I ordered.",
        "I measured my foot against your chart twice before picking {size}.",
        "What I got in {size} feels like it was cut for someone much smaller.",
        "The length is fine but it's far too narrow around the {part}.",
        "I compared it with my old pair and it's at least a half size off.",
    ],
    "cancel_order": [
        "I clicked cancel {minutes} minutes after ordering.",
        "The confirmation email never showed a cancel link.",
        "Your app showed an error when I tapped 'Cancel order'.",
        "I also called the store line but nobody picked up.",
    ],
    "warranty_claim": [
        "I've used it for about {months} months with normal wear.",
        "I sent the claim with photos and my order details {days} days ago.",
        "The claim portal keeps timing out on the last step.",
        "The defect is on the {part}, which I understand is covered.",
    ],
    "shipping_delay": [
        "Tracking hasn't moved in {days} days.",
        "The last scan shows it sitting at a sorting facility.",
        "The estimated delivery date was {days} days ago.",
        "I paid for faster shipping specifically to get it in time.",
        "The carrier says they never received the package from you.",
    ],
    "loyalty_redemption": [
        "I had {points} points available at checkout.",
        "The points disappeared from my balance but the discount wasn't applied.",
        "The rewards page says my points are pending for {days} days now.",
        "I've been a rewards member for {months} months and never had this happen.",
    ],
    "return_confusion": [
        "It's been {days} days since it arrived and I still have the tags.",
        "One page says {days2} days and another says something else.",
        "The return label generator asks for an RMA number I don't have.",
        "I only tried it on indoors, so it's in new condition.",
    ],
    "defective_product": [
        "It happened after about {uses} uses, nothing out of the ordinary.",
        "The problem is on the {part} and it's getting worse.",
        "I've attached photos showing the damage on the {part}.",
        "I followed the care label exactly, so this isn't from misuse.",
        "My previous one from you lasted much longer.",
    ],
    "promo_overcharge": [
        "The code should have taken {percent}% off.",
        "I was charged ${price} instead of the sale price.",
        "The banner on the homepage said the sale ran through this week.",
        "The cart showed the discount right up until the payment page.",
    ],
    "checkout_failure": [
        "I've tried {tries} times with two different cards.",
        "It fails right after I enter the security code.",
        "I cleared my browser cache and tried the app as well.",
        "My bank confirmed there were no blocks on their side.",
    ],
    "damaged_in_transit": [
        "The outer box had a hole punched through one corner.",
        "There's a deep scuff across the {part}.",
        "The delivery driver left it out in the rain on my porch.",
        "I took photos of the box before opening it.",
    ],
    "missing_item": [
        "The box only had {count} of the items I ordered.",
        "The weight on the shipping label seems too light for the full order.",
        "The packing slip lists it, but there was no sign of it in the box.",
        "I checked every compartment of the package twice.",
    ],
}

PARTS = [
    "heel",
    "toe box",
    "sole",
    "zipper",
    "seam",
    "collar",
    "waistband",
    "cuff",
    "strap",
    "lining",
    "laces",
    "pocket",
    "hood",
    "tongue",
    "midsole",
]

CONTEXT_PRICED = [
    "I paid ${price} for it on {order_date}.",
    "It was ${price}, ordered on {order_date}.",
    "I ordered it on {order_date} for ${price}.",
    "The order went through on {order_date} (${price}).",
    "This was a ${price} purchase from {order_date}.",
    "I bought it on {order_date}, about {days_since} days ago.",
    "I placed the order on {order_date}.",
    "It's from my order of {order_date}.",
]

MORE_TONE_LINES = {
    "polite": [
        "Thanks so much for your time.",
        "I'm sure it's just a mix-up, so thanks for checking.",
        "I'd be grateful for any guidance.",
        "Happy to send anything else you need.",
    ],
    "frustrated": [
        "This is the second time something like this has happened.",
        "I expect this to be fixed properly.",
        "I shouldn't have to chase this.",
        "I'm close to taking my business elsewhere.",
    ],
    "brief": ["Thanks in advance.", "Need this fixed.", "Appreciate a quick answer.", "Cheers."],
    "detailed": [
        "Let me know if you need the tracking number or the card I used.",
        "I can also send a short video if that helps your team.",
        "I kept the original box, the tags and the receipt.",
        "I've written down the exact times in case that helps.",
    ],
    "anxious": [
        "It's for an event this weekend, so timing matters a lot.",
        "Please tell me this can still be fixed.",
        "I really can't afford to lose this money.",
        "I'm checking my email every hour for your reply.",
    ],
}

PS_LINES = [
    "P.S. I love your products otherwise.",
    "P.S. My account email is the one I'm writing from.",
    "P.S. Feel free to call me if that's faster.",
    "P.S. I've been shopping with you for years.",
    "P.S. The rest of the order was great.",
    "P.S. Please keep my loyalty status in mind.",
]

PRODUCT_TEMPLATES = [
    "The {name} is built for {use}, with {a} and {b}.",
    "Meet the {name}: {a}, {b}, and a fit made for {use}.",
    "Designed for {use}, the {name} pairs {a} with {b}.",
    "With {a} and {b}, the {name} is ready for {use}.",
    "Our {name} brings {a} to {use}, plus {b}.",
    "Made for {use}, the {name} combines {a} and {b} in one {noun_lower}.",
    "{a_cap} and {b} make the {name} a go-to for {use}.",
    "Take the {name} to {use}: it has {a} and {b}.",
]

PRODUCT_EXTRAS = [
    "Available in {colour} and {colour2}.",
    "Comes in {colour}, {colour2} and a limited {colour3} edition.",
    "Part of our {season} collection.",
    "Backed by our warranty.",
    "A favourite of our run club.",
    "Customers rate it {rating} out of 5.",
    "Weighs {weight}.",
    "Made from {material}.",
    "Tested by our {city} athletes.",
    "Recycled materials make up {pct}% of it.",
    "Pairs well with the {season} line.",
    "A {season} staple.",
    "Reviewers give it {rating} stars.",
    "Shaped by feedback from {city} runners.",
    "{pct}% recycled content.",
    "Matches other {season} pieces.",
    "Shipped in plastic-free packaging.",
    "Field-tested around {city}.",
    "Average review: {rating}/5.",
]

SEASONS_WORD = ["spring", "summer", "fall", "winter", "holiday", "back-to-school"]
TEAM_CITIES = ["Portland", "Boulder", "Austin", "Boston", "Denver", "San Diego", "Chicago", "Seattle"]

ISSUE_STEPS = {
    "incorrect_item": [
        "Ask the customer for a photo of the item and the label on the box.",
        "Check the order's packing record to confirm which item was shipped.",
        "Arrange the return of the wrong item with a prepaid label.",
    ],
    "size_mismatch": [
        "Confirm the size ordered and the size the customer normally wears.",
        "Point the customer to the sizing guide for the product's category.",
        "Check stock of the requested size before promising a swap.",
    ],
    "cancel_order": [
        "Check whether the order has already left the warehouse.",
        "If it has shipped, explain that it can be returned instead.",
        "Confirm the cancellation in writing with the refund timeline.",
    ],
    "warranty_claim": [
        "Look up the claim number and the date it was filed.",
        "Ask for photos of the defect and the date of purchase.",
        "Escalate claims older than five business days to the warranty desk.",
    ],
    "shipping_delay": [
        "Check the carrier's tracking page and the last scan location.",
        "Open a trace with the carrier when there has been no scan for three days.",
        "Keep the customer updated every two business days.",
    ],
    "loyalty_redemption": [
        "Review the customer's points ledger for the order.",
        "Re-credit points that were deducted without a discount.",
        "Explain how points are applied at checkout.",
    ],
    "return_confusion": [
        "Explain the return window and the condition items must be in.",
        "Send the prepaid return label from the returns portal.",
        "Tell the customer when to expect their refund after we receive the item.",
    ],
    "defective_product": [
        "Ask for photos of the defect and how the product was used.",
        "Check whether other customers reported the same defect.",
        "Log the defect so the product team can review the batch.",
    ],
    "promo_overcharge": [
        "Check which promotion was active on the order date.",
        "Compare the charged price with the promotional price.",
        "Note the promo code in the case so finance can reconcile it.",
    ],
    "checkout_failure": [
        "Ask which payment method and device the customer used.",
        "Check the payment gateway log for the customer's attempts.",
        "Suggest an alternative payment method if the gateway declined.",
    ],
    "damaged_in_transit": [
        "Ask for photos of the package and the damaged item.",
        "File a damage claim with the carrier.",
        "Do not ask the customer to return items damaged beyond use.",
    ],
    "missing_item": [
        "Compare the packing slip with the order lines.",
        "Check whether the order shipped in more than one package.",
        "Confirm the shipping address and the delivery photo.",
    ],
}

GUIDE_TIPS = {
    "sizing": [
        "Measure in the evening, when feet and bodies are at their largest.",
        "If you are between sizes, size up for layering or thick socks.",
        "Compare with a favourite item you already own rather than a chart alone.",
        "Check the product page for model measurements and the size they wear.",
        "Try new items indoors first so they stay returnable.",
    ],
    "care": [
        "Turn items inside out before washing to protect prints and fabric.",
        "Skip fabric softener: it clogs technical fibres.",
        "Let shoes dry away from radiators and direct heat.",
        "Wash with similar colours on the first few cycles.",
        "Store clean and dry to keep odours away.",
    ],
}

LEAD_INS = {
    "polite": [
        "I'm writing about a recent order.",
        "I hope you're well.",
        "I wanted to reach out about my purchase.",
        "I have a quick question about something I bought.",
    ],
    "frustrated": [
        "I'm writing because something went wrong again.",
        "I need to raise a problem with my order.",
        "I'm not happy with how this order turned out.",
    ],
    "brief": ["Issue with an order.", "Problem with a purchase."],
    "detailed": [
        "I'd like to explain what happened in some detail.",
        "Here is the full background on my order.",
        "I'll try to give you everything you need in one go.",
    ],
    "anxious": [
        "I'm a little worried about my order.",
        "Something's wrong and I'm not sure what to do.",
        "I hope this can be sorted out quickly.",
    ],
}

CHAT_AGENT_ASK = [
    "Could you tell me a bit more about what happened?",
    "When did you first notice this?",
    "Do you still have the original packaging?",
    "Which size and colour did you order?",
    "Can you confirm the email address on the order?",
]

CHAT_CUSTOMER_DETAIL_PREFIX = ["Sure.", "Yes.", "OK so", "Well,", "Right,", ""]
CHAT_ORIGINS = ["Web Chat", "Mobile App Chat", "Help Center Chat"]
