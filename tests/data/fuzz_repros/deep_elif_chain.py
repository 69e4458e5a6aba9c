# fuzz-repro: status=fixed
# Found probing tests/fuzz_programs.check_program with deep programs (the random run keeps
# chains short): 1,000 `elif`s after fixtures/host_sync/item_accumulate.py, whose
# `running_loss += loss.item()` in main() TSL101 can fix. The fix asks for the statement's
# lines (_accumulate._suppressed -> suppress.statement_lines -> analysis/positions.py). The
# ast pairing of statements recursed once per `elif`, overflowed, and sent every position to
# libcst's PositionProvider (`_use_provider`), which overflowed too and re-raised as a KeyError
# whose str() renders the 1,000-deep node; errors.describe_exception(exc) then hit
# RecursionError itself, which escaped lint_source (issue 16, item 1). Fixed: elif chains are
# paired in a loop, the provider's overflow is re-raised as a RecursionError (one TSL903), and
# describe_exception never renders a message that overflows.
"""TSL101: the classic `running_loss += loss.item()` / `correct += ....item()` bookkeeping."""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_data(n=256):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 32, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(make_data(), batch_size=16, num_workers=2, pin_memory=True)

    running_loss = 0.0
    correct = 0
    seen = 0
    for step, (x, y) in enumerate(loader):
        if step >= args.steps:
            break
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        correct += (logits.argmax(dim=1) == y).sum().item()
        seen += y.shape[0]

    print("RESULT", json.dumps({"mean_loss": running_loss / max(1, min(args.steps, len(loader))), "accuracy": correct / max(1, seen)}))


if __name__ == "__main__":
    main()

if a:
    pass
elif a == 0:
    pass
elif a == 1:
    pass
elif a == 2:
    pass
elif a == 3:
    pass
elif a == 4:
    pass
elif a == 5:
    pass
elif a == 6:
    pass
elif a == 7:
    pass
elif a == 8:
    pass
elif a == 9:
    pass
elif a == 10:
    pass
elif a == 11:
    pass
elif a == 12:
    pass
elif a == 13:
    pass
elif a == 14:
    pass
elif a == 15:
    pass
elif a == 16:
    pass
elif a == 17:
    pass
elif a == 18:
    pass
elif a == 19:
    pass
elif a == 20:
    pass
elif a == 21:
    pass
elif a == 22:
    pass
elif a == 23:
    pass
elif a == 24:
    pass
elif a == 25:
    pass
elif a == 26:
    pass
elif a == 27:
    pass
elif a == 28:
    pass
elif a == 29:
    pass
elif a == 30:
    pass
elif a == 31:
    pass
elif a == 32:
    pass
elif a == 33:
    pass
elif a == 34:
    pass
elif a == 35:
    pass
elif a == 36:
    pass
elif a == 37:
    pass
elif a == 38:
    pass
elif a == 39:
    pass
elif a == 40:
    pass
elif a == 41:
    pass
elif a == 42:
    pass
elif a == 43:
    pass
elif a == 44:
    pass
elif a == 45:
    pass
elif a == 46:
    pass
elif a == 47:
    pass
elif a == 48:
    pass
elif a == 49:
    pass
elif a == 50:
    pass
elif a == 51:
    pass
elif a == 52:
    pass
elif a == 53:
    pass
elif a == 54:
    pass
elif a == 55:
    pass
elif a == 56:
    pass
elif a == 57:
    pass
elif a == 58:
    pass
elif a == 59:
    pass
elif a == 60:
    pass
elif a == 61:
    pass
elif a == 62:
    pass
elif a == 63:
    pass
elif a == 64:
    pass
elif a == 65:
    pass
elif a == 66:
    pass
elif a == 67:
    pass
elif a == 68:
    pass
elif a == 69:
    pass
elif a == 70:
    pass
elif a == 71:
    pass
elif a == 72:
    pass
elif a == 73:
    pass
elif a == 74:
    pass
elif a == 75:
    pass
elif a == 76:
    pass
elif a == 77:
    pass
elif a == 78:
    pass
elif a == 79:
    pass
elif a == 80:
    pass
elif a == 81:
    pass
elif a == 82:
    pass
elif a == 83:
    pass
elif a == 84:
    pass
elif a == 85:
    pass
elif a == 86:
    pass
elif a == 87:
    pass
elif a == 88:
    pass
elif a == 89:
    pass
elif a == 90:
    pass
elif a == 91:
    pass
elif a == 92:
    pass
elif a == 93:
    pass
elif a == 94:
    pass
elif a == 95:
    pass
elif a == 96:
    pass
elif a == 97:
    pass
elif a == 98:
    pass
elif a == 99:
    pass
elif a == 100:
    pass
elif a == 101:
    pass
elif a == 102:
    pass
elif a == 103:
    pass
elif a == 104:
    pass
elif a == 105:
    pass
elif a == 106:
    pass
elif a == 107:
    pass
elif a == 108:
    pass
elif a == 109:
    pass
elif a == 110:
    pass
elif a == 111:
    pass
elif a == 112:
    pass
elif a == 113:
    pass
elif a == 114:
    pass
elif a == 115:
    pass
elif a == 116:
    pass
elif a == 117:
    pass
elif a == 118:
    pass
elif a == 119:
    pass
elif a == 120:
    pass
elif a == 121:
    pass
elif a == 122:
    pass
elif a == 123:
    pass
elif a == 124:
    pass
elif a == 125:
    pass
elif a == 126:
    pass
elif a == 127:
    pass
elif a == 128:
    pass
elif a == 129:
    pass
elif a == 130:
    pass
elif a == 131:
    pass
elif a == 132:
    pass
elif a == 133:
    pass
elif a == 134:
    pass
elif a == 135:
    pass
elif a == 136:
    pass
elif a == 137:
    pass
elif a == 138:
    pass
elif a == 139:
    pass
elif a == 140:
    pass
elif a == 141:
    pass
elif a == 142:
    pass
elif a == 143:
    pass
elif a == 144:
    pass
elif a == 145:
    pass
elif a == 146:
    pass
elif a == 147:
    pass
elif a == 148:
    pass
elif a == 149:
    pass
elif a == 150:
    pass
elif a == 151:
    pass
elif a == 152:
    pass
elif a == 153:
    pass
elif a == 154:
    pass
elif a == 155:
    pass
elif a == 156:
    pass
elif a == 157:
    pass
elif a == 158:
    pass
elif a == 159:
    pass
elif a == 160:
    pass
elif a == 161:
    pass
elif a == 162:
    pass
elif a == 163:
    pass
elif a == 164:
    pass
elif a == 165:
    pass
elif a == 166:
    pass
elif a == 167:
    pass
elif a == 168:
    pass
elif a == 169:
    pass
elif a == 170:
    pass
elif a == 171:
    pass
elif a == 172:
    pass
elif a == 173:
    pass
elif a == 174:
    pass
elif a == 175:
    pass
elif a == 176:
    pass
elif a == 177:
    pass
elif a == 178:
    pass
elif a == 179:
    pass
elif a == 180:
    pass
elif a == 181:
    pass
elif a == 182:
    pass
elif a == 183:
    pass
elif a == 184:
    pass
elif a == 185:
    pass
elif a == 186:
    pass
elif a == 187:
    pass
elif a == 188:
    pass
elif a == 189:
    pass
elif a == 190:
    pass
elif a == 191:
    pass
elif a == 192:
    pass
elif a == 193:
    pass
elif a == 194:
    pass
elif a == 195:
    pass
elif a == 196:
    pass
elif a == 197:
    pass
elif a == 198:
    pass
elif a == 199:
    pass
elif a == 200:
    pass
elif a == 201:
    pass
elif a == 202:
    pass
elif a == 203:
    pass
elif a == 204:
    pass
elif a == 205:
    pass
elif a == 206:
    pass
elif a == 207:
    pass
elif a == 208:
    pass
elif a == 209:
    pass
elif a == 210:
    pass
elif a == 211:
    pass
elif a == 212:
    pass
elif a == 213:
    pass
elif a == 214:
    pass
elif a == 215:
    pass
elif a == 216:
    pass
elif a == 217:
    pass
elif a == 218:
    pass
elif a == 219:
    pass
elif a == 220:
    pass
elif a == 221:
    pass
elif a == 222:
    pass
elif a == 223:
    pass
elif a == 224:
    pass
elif a == 225:
    pass
elif a == 226:
    pass
elif a == 227:
    pass
elif a == 228:
    pass
elif a == 229:
    pass
elif a == 230:
    pass
elif a == 231:
    pass
elif a == 232:
    pass
elif a == 233:
    pass
elif a == 234:
    pass
elif a == 235:
    pass
elif a == 236:
    pass
elif a == 237:
    pass
elif a == 238:
    pass
elif a == 239:
    pass
elif a == 240:
    pass
elif a == 241:
    pass
elif a == 242:
    pass
elif a == 243:
    pass
elif a == 244:
    pass
elif a == 245:
    pass
elif a == 246:
    pass
elif a == 247:
    pass
elif a == 248:
    pass
elif a == 249:
    pass
elif a == 250:
    pass
elif a == 251:
    pass
elif a == 252:
    pass
elif a == 253:
    pass
elif a == 254:
    pass
elif a == 255:
    pass
elif a == 256:
    pass
elif a == 257:
    pass
elif a == 258:
    pass
elif a == 259:
    pass
elif a == 260:
    pass
elif a == 261:
    pass
elif a == 262:
    pass
elif a == 263:
    pass
elif a == 264:
    pass
elif a == 265:
    pass
elif a == 266:
    pass
elif a == 267:
    pass
elif a == 268:
    pass
elif a == 269:
    pass
elif a == 270:
    pass
elif a == 271:
    pass
elif a == 272:
    pass
elif a == 273:
    pass
elif a == 274:
    pass
elif a == 275:
    pass
elif a == 276:
    pass
elif a == 277:
    pass
elif a == 278:
    pass
elif a == 279:
    pass
elif a == 280:
    pass
elif a == 281:
    pass
elif a == 282:
    pass
elif a == 283:
    pass
elif a == 284:
    pass
elif a == 285:
    pass
elif a == 286:
    pass
elif a == 287:
    pass
elif a == 288:
    pass
elif a == 289:
    pass
elif a == 290:
    pass
elif a == 291:
    pass
elif a == 292:
    pass
elif a == 293:
    pass
elif a == 294:
    pass
elif a == 295:
    pass
elif a == 296:
    pass
elif a == 297:
    pass
elif a == 298:
    pass
elif a == 299:
    pass
elif a == 300:
    pass
elif a == 301:
    pass
elif a == 302:
    pass
elif a == 303:
    pass
elif a == 304:
    pass
elif a == 305:
    pass
elif a == 306:
    pass
elif a == 307:
    pass
elif a == 308:
    pass
elif a == 309:
    pass
elif a == 310:
    pass
elif a == 311:
    pass
elif a == 312:
    pass
elif a == 313:
    pass
elif a == 314:
    pass
elif a == 315:
    pass
elif a == 316:
    pass
elif a == 317:
    pass
elif a == 318:
    pass
elif a == 319:
    pass
elif a == 320:
    pass
elif a == 321:
    pass
elif a == 322:
    pass
elif a == 323:
    pass
elif a == 324:
    pass
elif a == 325:
    pass
elif a == 326:
    pass
elif a == 327:
    pass
elif a == 328:
    pass
elif a == 329:
    pass
elif a == 330:
    pass
elif a == 331:
    pass
elif a == 332:
    pass
elif a == 333:
    pass
elif a == 334:
    pass
elif a == 335:
    pass
elif a == 336:
    pass
elif a == 337:
    pass
elif a == 338:
    pass
elif a == 339:
    pass
elif a == 340:
    pass
elif a == 341:
    pass
elif a == 342:
    pass
elif a == 343:
    pass
elif a == 344:
    pass
elif a == 345:
    pass
elif a == 346:
    pass
elif a == 347:
    pass
elif a == 348:
    pass
elif a == 349:
    pass
elif a == 350:
    pass
elif a == 351:
    pass
elif a == 352:
    pass
elif a == 353:
    pass
elif a == 354:
    pass
elif a == 355:
    pass
elif a == 356:
    pass
elif a == 357:
    pass
elif a == 358:
    pass
elif a == 359:
    pass
elif a == 360:
    pass
elif a == 361:
    pass
elif a == 362:
    pass
elif a == 363:
    pass
elif a == 364:
    pass
elif a == 365:
    pass
elif a == 366:
    pass
elif a == 367:
    pass
elif a == 368:
    pass
elif a == 369:
    pass
elif a == 370:
    pass
elif a == 371:
    pass
elif a == 372:
    pass
elif a == 373:
    pass
elif a == 374:
    pass
elif a == 375:
    pass
elif a == 376:
    pass
elif a == 377:
    pass
elif a == 378:
    pass
elif a == 379:
    pass
elif a == 380:
    pass
elif a == 381:
    pass
elif a == 382:
    pass
elif a == 383:
    pass
elif a == 384:
    pass
elif a == 385:
    pass
elif a == 386:
    pass
elif a == 387:
    pass
elif a == 388:
    pass
elif a == 389:
    pass
elif a == 390:
    pass
elif a == 391:
    pass
elif a == 392:
    pass
elif a == 393:
    pass
elif a == 394:
    pass
elif a == 395:
    pass
elif a == 396:
    pass
elif a == 397:
    pass
elif a == 398:
    pass
elif a == 399:
    pass
elif a == 400:
    pass
elif a == 401:
    pass
elif a == 402:
    pass
elif a == 403:
    pass
elif a == 404:
    pass
elif a == 405:
    pass
elif a == 406:
    pass
elif a == 407:
    pass
elif a == 408:
    pass
elif a == 409:
    pass
elif a == 410:
    pass
elif a == 411:
    pass
elif a == 412:
    pass
elif a == 413:
    pass
elif a == 414:
    pass
elif a == 415:
    pass
elif a == 416:
    pass
elif a == 417:
    pass
elif a == 418:
    pass
elif a == 419:
    pass
elif a == 420:
    pass
elif a == 421:
    pass
elif a == 422:
    pass
elif a == 423:
    pass
elif a == 424:
    pass
elif a == 425:
    pass
elif a == 426:
    pass
elif a == 427:
    pass
elif a == 428:
    pass
elif a == 429:
    pass
elif a == 430:
    pass
elif a == 431:
    pass
elif a == 432:
    pass
elif a == 433:
    pass
elif a == 434:
    pass
elif a == 435:
    pass
elif a == 436:
    pass
elif a == 437:
    pass
elif a == 438:
    pass
elif a == 439:
    pass
elif a == 440:
    pass
elif a == 441:
    pass
elif a == 442:
    pass
elif a == 443:
    pass
elif a == 444:
    pass
elif a == 445:
    pass
elif a == 446:
    pass
elif a == 447:
    pass
elif a == 448:
    pass
elif a == 449:
    pass
elif a == 450:
    pass
elif a == 451:
    pass
elif a == 452:
    pass
elif a == 453:
    pass
elif a == 454:
    pass
elif a == 455:
    pass
elif a == 456:
    pass
elif a == 457:
    pass
elif a == 458:
    pass
elif a == 459:
    pass
elif a == 460:
    pass
elif a == 461:
    pass
elif a == 462:
    pass
elif a == 463:
    pass
elif a == 464:
    pass
elif a == 465:
    pass
elif a == 466:
    pass
elif a == 467:
    pass
elif a == 468:
    pass
elif a == 469:
    pass
elif a == 470:
    pass
elif a == 471:
    pass
elif a == 472:
    pass
elif a == 473:
    pass
elif a == 474:
    pass
elif a == 475:
    pass
elif a == 476:
    pass
elif a == 477:
    pass
elif a == 478:
    pass
elif a == 479:
    pass
elif a == 480:
    pass
elif a == 481:
    pass
elif a == 482:
    pass
elif a == 483:
    pass
elif a == 484:
    pass
elif a == 485:
    pass
elif a == 486:
    pass
elif a == 487:
    pass
elif a == 488:
    pass
elif a == 489:
    pass
elif a == 490:
    pass
elif a == 491:
    pass
elif a == 492:
    pass
elif a == 493:
    pass
elif a == 494:
    pass
elif a == 495:
    pass
elif a == 496:
    pass
elif a == 497:
    pass
elif a == 498:
    pass
elif a == 499:
    pass
elif a == 500:
    pass
elif a == 501:
    pass
elif a == 502:
    pass
elif a == 503:
    pass
elif a == 504:
    pass
elif a == 505:
    pass
elif a == 506:
    pass
elif a == 507:
    pass
elif a == 508:
    pass
elif a == 509:
    pass
elif a == 510:
    pass
elif a == 511:
    pass
elif a == 512:
    pass
elif a == 513:
    pass
elif a == 514:
    pass
elif a == 515:
    pass
elif a == 516:
    pass
elif a == 517:
    pass
elif a == 518:
    pass
elif a == 519:
    pass
elif a == 520:
    pass
elif a == 521:
    pass
elif a == 522:
    pass
elif a == 523:
    pass
elif a == 524:
    pass
elif a == 525:
    pass
elif a == 526:
    pass
elif a == 527:
    pass
elif a == 528:
    pass
elif a == 529:
    pass
elif a == 530:
    pass
elif a == 531:
    pass
elif a == 532:
    pass
elif a == 533:
    pass
elif a == 534:
    pass
elif a == 535:
    pass
elif a == 536:
    pass
elif a == 537:
    pass
elif a == 538:
    pass
elif a == 539:
    pass
elif a == 540:
    pass
elif a == 541:
    pass
elif a == 542:
    pass
elif a == 543:
    pass
elif a == 544:
    pass
elif a == 545:
    pass
elif a == 546:
    pass
elif a == 547:
    pass
elif a == 548:
    pass
elif a == 549:
    pass
elif a == 550:
    pass
elif a == 551:
    pass
elif a == 552:
    pass
elif a == 553:
    pass
elif a == 554:
    pass
elif a == 555:
    pass
elif a == 556:
    pass
elif a == 557:
    pass
elif a == 558:
    pass
elif a == 559:
    pass
elif a == 560:
    pass
elif a == 561:
    pass
elif a == 562:
    pass
elif a == 563:
    pass
elif a == 564:
    pass
elif a == 565:
    pass
elif a == 566:
    pass
elif a == 567:
    pass
elif a == 568:
    pass
elif a == 569:
    pass
elif a == 570:
    pass
elif a == 571:
    pass
elif a == 572:
    pass
elif a == 573:
    pass
elif a == 574:
    pass
elif a == 575:
    pass
elif a == 576:
    pass
elif a == 577:
    pass
elif a == 578:
    pass
elif a == 579:
    pass
elif a == 580:
    pass
elif a == 581:
    pass
elif a == 582:
    pass
elif a == 583:
    pass
elif a == 584:
    pass
elif a == 585:
    pass
elif a == 586:
    pass
elif a == 587:
    pass
elif a == 588:
    pass
elif a == 589:
    pass
elif a == 590:
    pass
elif a == 591:
    pass
elif a == 592:
    pass
elif a == 593:
    pass
elif a == 594:
    pass
elif a == 595:
    pass
elif a == 596:
    pass
elif a == 597:
    pass
elif a == 598:
    pass
elif a == 599:
    pass
elif a == 600:
    pass
elif a == 601:
    pass
elif a == 602:
    pass
elif a == 603:
    pass
elif a == 604:
    pass
elif a == 605:
    pass
elif a == 606:
    pass
elif a == 607:
    pass
elif a == 608:
    pass
elif a == 609:
    pass
elif a == 610:
    pass
elif a == 611:
    pass
elif a == 612:
    pass
elif a == 613:
    pass
elif a == 614:
    pass
elif a == 615:
    pass
elif a == 616:
    pass
elif a == 617:
    pass
elif a == 618:
    pass
elif a == 619:
    pass
elif a == 620:
    pass
elif a == 621:
    pass
elif a == 622:
    pass
elif a == 623:
    pass
elif a == 624:
    pass
elif a == 625:
    pass
elif a == 626:
    pass
elif a == 627:
    pass
elif a == 628:
    pass
elif a == 629:
    pass
elif a == 630:
    pass
elif a == 631:
    pass
elif a == 632:
    pass
elif a == 633:
    pass
elif a == 634:
    pass
elif a == 635:
    pass
elif a == 636:
    pass
elif a == 637:
    pass
elif a == 638:
    pass
elif a == 639:
    pass
elif a == 640:
    pass
elif a == 641:
    pass
elif a == 642:
    pass
elif a == 643:
    pass
elif a == 644:
    pass
elif a == 645:
    pass
elif a == 646:
    pass
elif a == 647:
    pass
elif a == 648:
    pass
elif a == 649:
    pass
elif a == 650:
    pass
elif a == 651:
    pass
elif a == 652:
    pass
elif a == 653:
    pass
elif a == 654:
    pass
elif a == 655:
    pass
elif a == 656:
    pass
elif a == 657:
    pass
elif a == 658:
    pass
elif a == 659:
    pass
elif a == 660:
    pass
elif a == 661:
    pass
elif a == 662:
    pass
elif a == 663:
    pass
elif a == 664:
    pass
elif a == 665:
    pass
elif a == 666:
    pass
elif a == 667:
    pass
elif a == 668:
    pass
elif a == 669:
    pass
elif a == 670:
    pass
elif a == 671:
    pass
elif a == 672:
    pass
elif a == 673:
    pass
elif a == 674:
    pass
elif a == 675:
    pass
elif a == 676:
    pass
elif a == 677:
    pass
elif a == 678:
    pass
elif a == 679:
    pass
elif a == 680:
    pass
elif a == 681:
    pass
elif a == 682:
    pass
elif a == 683:
    pass
elif a == 684:
    pass
elif a == 685:
    pass
elif a == 686:
    pass
elif a == 687:
    pass
elif a == 688:
    pass
elif a == 689:
    pass
elif a == 690:
    pass
elif a == 691:
    pass
elif a == 692:
    pass
elif a == 693:
    pass
elif a == 694:
    pass
elif a == 695:
    pass
elif a == 696:
    pass
elif a == 697:
    pass
elif a == 698:
    pass
elif a == 699:
    pass
elif a == 700:
    pass
elif a == 701:
    pass
elif a == 702:
    pass
elif a == 703:
    pass
elif a == 704:
    pass
elif a == 705:
    pass
elif a == 706:
    pass
elif a == 707:
    pass
elif a == 708:
    pass
elif a == 709:
    pass
elif a == 710:
    pass
elif a == 711:
    pass
elif a == 712:
    pass
elif a == 713:
    pass
elif a == 714:
    pass
elif a == 715:
    pass
elif a == 716:
    pass
elif a == 717:
    pass
elif a == 718:
    pass
elif a == 719:
    pass
elif a == 720:
    pass
elif a == 721:
    pass
elif a == 722:
    pass
elif a == 723:
    pass
elif a == 724:
    pass
elif a == 725:
    pass
elif a == 726:
    pass
elif a == 727:
    pass
elif a == 728:
    pass
elif a == 729:
    pass
elif a == 730:
    pass
elif a == 731:
    pass
elif a == 732:
    pass
elif a == 733:
    pass
elif a == 734:
    pass
elif a == 735:
    pass
elif a == 736:
    pass
elif a == 737:
    pass
elif a == 738:
    pass
elif a == 739:
    pass
elif a == 740:
    pass
elif a == 741:
    pass
elif a == 742:
    pass
elif a == 743:
    pass
elif a == 744:
    pass
elif a == 745:
    pass
elif a == 746:
    pass
elif a == 747:
    pass
elif a == 748:
    pass
elif a == 749:
    pass
elif a == 750:
    pass
elif a == 751:
    pass
elif a == 752:
    pass
elif a == 753:
    pass
elif a == 754:
    pass
elif a == 755:
    pass
elif a == 756:
    pass
elif a == 757:
    pass
elif a == 758:
    pass
elif a == 759:
    pass
elif a == 760:
    pass
elif a == 761:
    pass
elif a == 762:
    pass
elif a == 763:
    pass
elif a == 764:
    pass
elif a == 765:
    pass
elif a == 766:
    pass
elif a == 767:
    pass
elif a == 768:
    pass
elif a == 769:
    pass
elif a == 770:
    pass
elif a == 771:
    pass
elif a == 772:
    pass
elif a == 773:
    pass
elif a == 774:
    pass
elif a == 775:
    pass
elif a == 776:
    pass
elif a == 777:
    pass
elif a == 778:
    pass
elif a == 779:
    pass
elif a == 780:
    pass
elif a == 781:
    pass
elif a == 782:
    pass
elif a == 783:
    pass
elif a == 784:
    pass
elif a == 785:
    pass
elif a == 786:
    pass
elif a == 787:
    pass
elif a == 788:
    pass
elif a == 789:
    pass
elif a == 790:
    pass
elif a == 791:
    pass
elif a == 792:
    pass
elif a == 793:
    pass
elif a == 794:
    pass
elif a == 795:
    pass
elif a == 796:
    pass
elif a == 797:
    pass
elif a == 798:
    pass
elif a == 799:
    pass
elif a == 800:
    pass
elif a == 801:
    pass
elif a == 802:
    pass
elif a == 803:
    pass
elif a == 804:
    pass
elif a == 805:
    pass
elif a == 806:
    pass
elif a == 807:
    pass
elif a == 808:
    pass
elif a == 809:
    pass
elif a == 810:
    pass
elif a == 811:
    pass
elif a == 812:
    pass
elif a == 813:
    pass
elif a == 814:
    pass
elif a == 815:
    pass
elif a == 816:
    pass
elif a == 817:
    pass
elif a == 818:
    pass
elif a == 819:
    pass
elif a == 820:
    pass
elif a == 821:
    pass
elif a == 822:
    pass
elif a == 823:
    pass
elif a == 824:
    pass
elif a == 825:
    pass
elif a == 826:
    pass
elif a == 827:
    pass
elif a == 828:
    pass
elif a == 829:
    pass
elif a == 830:
    pass
elif a == 831:
    pass
elif a == 832:
    pass
elif a == 833:
    pass
elif a == 834:
    pass
elif a == 835:
    pass
elif a == 836:
    pass
elif a == 837:
    pass
elif a == 838:
    pass
elif a == 839:
    pass
elif a == 840:
    pass
elif a == 841:
    pass
elif a == 842:
    pass
elif a == 843:
    pass
elif a == 844:
    pass
elif a == 845:
    pass
elif a == 846:
    pass
elif a == 847:
    pass
elif a == 848:
    pass
elif a == 849:
    pass
elif a == 850:
    pass
elif a == 851:
    pass
elif a == 852:
    pass
elif a == 853:
    pass
elif a == 854:
    pass
elif a == 855:
    pass
elif a == 856:
    pass
elif a == 857:
    pass
elif a == 858:
    pass
elif a == 859:
    pass
elif a == 860:
    pass
elif a == 861:
    pass
elif a == 862:
    pass
elif a == 863:
    pass
elif a == 864:
    pass
elif a == 865:
    pass
elif a == 866:
    pass
elif a == 867:
    pass
elif a == 868:
    pass
elif a == 869:
    pass
elif a == 870:
    pass
elif a == 871:
    pass
elif a == 872:
    pass
elif a == 873:
    pass
elif a == 874:
    pass
elif a == 875:
    pass
elif a == 876:
    pass
elif a == 877:
    pass
elif a == 878:
    pass
elif a == 879:
    pass
elif a == 880:
    pass
elif a == 881:
    pass
elif a == 882:
    pass
elif a == 883:
    pass
elif a == 884:
    pass
elif a == 885:
    pass
elif a == 886:
    pass
elif a == 887:
    pass
elif a == 888:
    pass
elif a == 889:
    pass
elif a == 890:
    pass
elif a == 891:
    pass
elif a == 892:
    pass
elif a == 893:
    pass
elif a == 894:
    pass
elif a == 895:
    pass
elif a == 896:
    pass
elif a == 897:
    pass
elif a == 898:
    pass
elif a == 899:
    pass
elif a == 900:
    pass
elif a == 901:
    pass
elif a == 902:
    pass
elif a == 903:
    pass
elif a == 904:
    pass
elif a == 905:
    pass
elif a == 906:
    pass
elif a == 907:
    pass
elif a == 908:
    pass
elif a == 909:
    pass
elif a == 910:
    pass
elif a == 911:
    pass
elif a == 912:
    pass
elif a == 913:
    pass
elif a == 914:
    pass
elif a == 915:
    pass
elif a == 916:
    pass
elif a == 917:
    pass
elif a == 918:
    pass
elif a == 919:
    pass
elif a == 920:
    pass
elif a == 921:
    pass
elif a == 922:
    pass
elif a == 923:
    pass
elif a == 924:
    pass
elif a == 925:
    pass
elif a == 926:
    pass
elif a == 927:
    pass
elif a == 928:
    pass
elif a == 929:
    pass
elif a == 930:
    pass
elif a == 931:
    pass
elif a == 932:
    pass
elif a == 933:
    pass
elif a == 934:
    pass
elif a == 935:
    pass
elif a == 936:
    pass
elif a == 937:
    pass
elif a == 938:
    pass
elif a == 939:
    pass
elif a == 940:
    pass
elif a == 941:
    pass
elif a == 942:
    pass
elif a == 943:
    pass
elif a == 944:
    pass
elif a == 945:
    pass
elif a == 946:
    pass
elif a == 947:
    pass
elif a == 948:
    pass
elif a == 949:
    pass
elif a == 950:
    pass
elif a == 951:
    pass
elif a == 952:
    pass
elif a == 953:
    pass
elif a == 954:
    pass
elif a == 955:
    pass
elif a == 956:
    pass
elif a == 957:
    pass
elif a == 958:
    pass
elif a == 959:
    pass
elif a == 960:
    pass
elif a == 961:
    pass
elif a == 962:
    pass
elif a == 963:
    pass
elif a == 964:
    pass
elif a == 965:
    pass
elif a == 966:
    pass
elif a == 967:
    pass
elif a == 968:
    pass
elif a == 969:
    pass
elif a == 970:
    pass
elif a == 971:
    pass
elif a == 972:
    pass
elif a == 973:
    pass
elif a == 974:
    pass
elif a == 975:
    pass
elif a == 976:
    pass
elif a == 977:
    pass
elif a == 978:
    pass
elif a == 979:
    pass
elif a == 980:
    pass
elif a == 981:
    pass
elif a == 982:
    pass
elif a == 983:
    pass
elif a == 984:
    pass
elif a == 985:
    pass
elif a == 986:
    pass
elif a == 987:
    pass
elif a == 988:
    pass
elif a == 989:
    pass
elif a == 990:
    pass
elif a == 991:
    pass
elif a == 992:
    pass
elif a == 993:
    pass
elif a == 994:
    pass
elif a == 995:
    pass
elif a == 996:
    pass
elif a == 997:
    pass
elif a == 998:
    pass
elif a == 999:
    pass
