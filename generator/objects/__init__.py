"""Structured synthesis, one generator per sObject, all driven by the latent world."""

from __future__ import annotations

from generator.objects.base import BuildContext, ObjectGenerator
from generator.objects.cases import CaseGenerator, CaseHistoryGenerator
from generator.objects.catalog import (
    IssueGenerator,
    KnowledgeGenerator,
    Pricebook2Generator,
    PricebookEntryGenerator,
    Product2Generator,
    ProductCategoryGenerator,
    ProductCategoryProductGenerator,
)
from generator.objects.conversations import EmailMessageGenerator, LiveChatTranscriptGenerator
from generator.objects.orders import BuildError, OrderGenerator, OrderItemGenerator
from generator.objects.people import AccountGenerator, ContactGenerator, UserGenerator

GENERATORS: dict[str, ObjectGenerator] = {
    g.sobject: g
    for g in [
        UserGenerator(),
        AccountGenerator(),
        ContactGenerator(),
        IssueGenerator(),
        KnowledgeGenerator(),
        ProductCategoryGenerator(),
        Product2Generator(),
        ProductCategoryProductGenerator(),
        Pricebook2Generator(),
        PricebookEntryGenerator(),
        OrderGenerator(),
        OrderItemGenerator(),
        CaseGenerator(),
        CaseHistoryGenerator(),
        EmailMessageGenerator(),
        LiveChatTranscriptGenerator(),
    ]
}

__all__ = ["GENERATORS", "BuildContext", "BuildError", "ObjectGenerator"]
